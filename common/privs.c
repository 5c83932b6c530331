#include "common/privs.h"
#include "common/cleanup.h"

#include <errno.h>
#include <grp.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#ifndef CAP_CHECKPOINT_RESTORE
#define CAP_CHECKPOINT_RESTORE 40
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif
#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif

int privs__drop_collector(void)
{
	static const cap_value_t keep[] = { CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE, CAP_CHECKPOINT_RESTORE, CAP_SYSLOG };
	cap_t caps;
	int err = 0;

	/* Bounding set first: it needs CAP_SETPCAP, which is dropped below. */
	for (cap_value_t c = 0; c <= CAP_LAST_CAP || cap_valid(c); c++) {
		int kept = 0;
		for (unsigned i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
			kept |= keep[i] == c;
		if (!kept && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno != EINVAL)
			return -errno;
	}
	caps = cap_init();
	if (!caps)
		return -errno;
	if (cap_set_flag(caps, CAP_EFFECTIVE, ARRAY_SIZE(keep), keep, CAP_SET) ||
	    cap_set_flag(caps, CAP_PERMITTED, ARRAY_SIZE(keep), keep, CAP_SET) || cap_set_proc(caps))
		err = -errno;
	cap_free(caps);
	if (err)
		return err;
	/* Inheritable/ambient are empty after cap_init; no_new_privs stops regaining any. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	return 0;
}

int privs__become_user(unsigned uid, unsigned gid)
{
	cap_t caps;
	int err = 0;

	if (setgroups(0, NULL) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid))
		return -errno;
	/* A non-root uid already lost its caps on setresuid; make sure of it. */
	caps = cap_init();
	if (!caps)
		return -errno;
	if (cap_set_proc(caps))
		err = -errno;
	cap_free(caps);
	if (err)
		return err;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	if (uid != 0 && setuid(0) == 0) /* must not be able to go back */
		return -EPERM;
	return 0;
}

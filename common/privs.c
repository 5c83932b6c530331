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

/*
 * Effective and permitted sets = keep[0, n) (nothing for n = 0), inheritable
 * and ambient empty, then no_new_privs so that nothing is regained.  0 or -errno.
 */
static int set_caps_for_good(const cap_value_t *keep, int n)
{
	cap_t caps = cap_init();
	int err = 0;

	if (!caps)
		return -errno;
	if (n && (cap_set_flag(caps, CAP_EFFECTIVE, n, keep, CAP_SET) ||
		  cap_set_flag(caps, CAP_PERMITTED, n, keep, CAP_SET)))
		err = -errno;
	if (!err && cap_set_proc(caps))
		err = -errno;
	cap_free(caps);
	if (!err && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		err = -errno;
	return err;
}

int privs__drop_collector(void)
{
	static const cap_value_t keep[] = { CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE, CAP_CHECKPOINT_RESTORE, CAP_SYSLOG };

	/* Bounding set first: it needs CAP_SETPCAP, which is dropped below. */
	for (cap_value_t c = 0; c <= CAP_LAST_CAP || cap_valid(c); c++) {
		int kept = 0;
		for (unsigned i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
			kept |= keep[i] == c;
		if (!kept && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno != EINVAL)
			return -errno;
	}
	/* Inheritable/ambient are empty after cap_init; no_new_privs stops regaining any. */
	return set_caps_for_good(keep, ARRAY_SIZE(keep));
}

/* Bounding set = keep[0, n), then set_caps_for_good. */
static int keep_only(const cap_value_t *keep, int n)
{
	for (cap_value_t c = 0; c <= CAP_LAST_CAP || cap_valid(c); c++) {
		int kept = 0;
		for (int i = 0; i < n; i++)
			kept |= keep[i] == c;
		if (!kept && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno != EINVAL)
			return -errno;
	}
	return set_caps_for_good(keep, n);
}

int privs__drop_attacher(void)
{
	static const cap_value_t keep[] = { CAP_SETUID, CAP_SETGID, CAP_SYS_PTRACE };
	int err = keep_only(keep, ARRAY_SIZE(keep));

	if (!err && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
		err = -errno;
	return err;
}

int privs__become_root_ptracer(unsigned gid)
{
	static const cap_value_t keep[] = { CAP_SYS_PTRACE };

	if (setgroups(0, NULL) || setresgid(gid, gid, gid))
		return -errno;
	return set_caps_for_good(keep, ARRAY_SIZE(keep));
}

int privs__become_user(unsigned uid, unsigned gid)
{
	int err;

	if (setgroups(0, NULL) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid))
		return -errno;
	/* A non-root uid already lost its caps on setresuid; make sure of it. */
	if ((err = set_caps_for_good(NULL, 0)))
		return err;
	if (uid != 0 && setuid(0) == 0) /* must not be able to go back */
		return -EPERM;
	return 0;
}

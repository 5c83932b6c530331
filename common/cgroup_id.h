/*
 * Which container and pod a process runs in, from its /proc/<pid>/cgroup
 * text (untrusted: any process can be made to sit in any cgroup path; the
 * result only names, never authorises).  Recognised, in the last path
 * component that has one: a 64-hex-digit container id, bare or after
 * "docker-", "cri-containerd-", "crio-" or "libpod-" (and before ".scope");
 * a Kubernetes pod uid after "pod" in a kubepods component (systemd's "_"
 * turned back into "-").  No I/O, no allocation.
 */
#ifndef EMBER_COMMON_CGROUP_ID_H
#define EMBER_COMMON_CGROUP_ID_H

#include <stddef.h>

#define CGROUP_CONTAINER_ID_LEN 64
#define CGROUP_POD_ID_MAX 64

/*
 * Parses len bytes of text.  container gets the 64-hex id or "" (at least
 * CGROUP_CONTAINER_ID_LEN + 1 bytes), pod the uid or "" (at least
 * CGROUP_POD_ID_MAX bytes).  Returns 1 when a container was found, else 0.
 */
int cgroup_id__parse(const char *text, size_t len, char *container, char *pod);

#endif

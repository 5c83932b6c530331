/*
 * Network profiling: the socket calls of target processes, from the syscall
 * layer, with a bounded prefix of the data each call moved, written into a
 * BPF ring buffer, which the collector copies to the analyzers' rings;
 * retransmits and drops from their tracepoints, for sockets a target call
 * has touched; the plaintext of TLS library calls from uprobes; the forks,
 * exits, execs and executable mappings of target processes.  Nothing is
 * parsed here.
 *
 * One object, one file per concern, included below in the order their uses
 * need (bpf/README.md lists what each holds).  They share the target table,
 * the ring, the scratch and the counters (net_event.bpf.h) and the socket
 * readers (net_sock.bpf.h).
 *
 * Every function takes `btf`, a constant: the tp_btf programs read
 * kernel memory with plain loads (registers, the fd table, the file, the
 * socket: the verifier turns them into fault-safe loads), the raw_tp ones
 * through bpf_probe_read_kernel.  A target's socket call reads some twenty
 * kernel fields; as helper calls they were most of its cost.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "bpf/net_abi.h"
#include "bpf/ember.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#include "bpf/net_event.bpf.h"          /* targets, ring buffer, scratch, counters, losses */
#include "bpf/net_sock.bpf.h"           /* socket of an fd, addresses, sockets touched */
#include "bpf/net_proc.bpf.h"           /* fork, exit, exec, executable mappings */
#include "bpf/net_l4.bpf.h"             /* TCP retransmits and drops */
#include "bpf/net_tls.bpf.h"            /* TLS library calls (uprobes) */
#include "bpf/net_syscalls.bpf.h"       /* socket calls (sys_enter / sys_exit) */
#include "bpf/net_l2.bpf.h"             /* packets under a call */
#include "bpf/net_socklayer.bpf.h"      /* socket calls (sock_send_length / sock_recv_length) */

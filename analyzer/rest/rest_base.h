/*
 * The REST API's baseinfo feature: the host's basic metrics every
 * report_period, from /proc and /sys, named as gala-gopher's system_infos
 * probe names them (gala_gopher_<entity>_<metric>) and published to the
 * exporter as meters (so /metrics shows them):
 *
 *   cpu   entity cpu, key cpu_num: user/nice/system/iowait/irq/softirq
 *         _total_second (/proc/stat), rcu, timer, sched, net_rx (softirqs
 *         since boot, /proc/softirqs)
 *   mem   entity mem, key infos="meminfo": total_kB, free_kB, available_kB,
 *         util (%), buffers_kB, cache_kB, active_kB, inactive_kB,
 *         swap_total_kB, swap_free_kB, swap_util, slab_kB, SReclaimable_kB,
 *         Unreclaim_kB, page_kB, vmalloc_kB, stack_kB, shmem_kB (/proc/meminfo)
 *   nic   entity nic, key dev_name: rx/tx _bytes, _packets, _errs, _dropped
 *         (/sys/class/net/<dev>/statistics; dev_name filters)
 *   disk  entity disk, key disk_name: rspeed, rspeed_kB, r_await, rareq,
 *         wspeed, wspeed_kB, w_await, wareq, util over the period
 *         (/proc/diskstats; from the second period on; dev_name filters)
 *   net   entities system_tcp (curr_estab, in_segs, out_segs, retrans_segs,
 *         in_errs) and system_udp (indata_grams, outdata_grams), key origin
 *         (/proc/net/snmp)
 *   fs    entity file_system, key MountOn, labels File_sys, Inodes, Blocks:
 *         IUsed, IFree, IUsePer, Used, Free, UsePer (KiB; statvfs of
 *         /proc/mounts' block-device and tmpfs mounts)
 *   host  entity host: value 1, labels os_version, hostname, kversion,
 *         cpu_num, memory_MB, ip_addr, host_type (vm when the CPU flags say
 *         hypervisor, else pm), clock_ticks, os_btime
 *   proc  entity proc, key tgid, labels comm, pgid, ppid, for the processes the
 *         snoopers select: utime/stime/cutime/cstime_jiffies, minor/major
 *         _pagefault_count, priority, nice, num_threads, vm_size, pm_size
 *         (bytes), pm_util (%), cpu (/proc/<pid>/stat; gala-gopher's io, fd
 *         and smaps figures need ptrace rights the analyzer does not have)  Every file
 * is read with a bounded buffer and parsed defensively; what cannot be read
 * is counted.  Runs on the REST thread; not thread-safe.
 */
#ifndef EMBER_ANALYZER_REST_REST_BASE_H
#define EMBER_ANALYZER_REST_REST_BASE_H

#include <stdint.h>

#include "analyzer/rest/rest_doc.h"

struct rest_base;

/*
 * A process that was shown and is not at the next collection (it exited, the
 * snoopers no longer select it) or the proc sub-item or the feature stopped:
 * its gala_gopher_proc_* series are dropped from the exporter's tables at
 * once (MeterBatch.drops) instead of ageing out.
 *
 * proc_root/sys_root NULL: "/proc", "/sys".  Sends through a publisher of its own to endpoint. NULL + errno. */
struct rest_base *rest_base__new(void *zctx, const char *exporter_endpoint, const char *proc_root, const char *sys_root);
struct rest_base *rest_base__free(struct rest_base *b);
void rest_base__set(struct rest_base *b, const struct rest_doc *d);
void rest_base__tick(struct rest_base *b, uint64_t now_ms);

#endif

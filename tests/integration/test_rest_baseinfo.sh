#!/usr/bin/env bash
# The REST API's baseinfo feature: PUT /baseinfo (cpu, mem, nic, disk, net,
# fs; report_period 5) puts gala-gopher's system metrics on /metrics, each
# checked against the kernel's own files read around the scrape: MemTotal
# exactly, CPU seconds and loopback bytes between the values before the PUT
# and after the scrape, each file system's used KiB against statvfs, TCP's
# established connections present, the host's kernel, CPUs and memory, the
# selected process's threads and parent (and no other process); disk rates
# from the second period on.  An unknown sub-item is refused.
. "$(dirname "$0")/lib.sh"
need_bpf
PY=/usr/bin/python3
start_rest_agent
PORT=$REST_PORT EPORT=$PROM_PORT
U=http://127.0.0.1:$PORT
r=$(curl -s -w ' %{http_code}' -X PUT "$U/baseinfo" -d 'json={"cmd": {"probe": ["cpu", "gpu"]}, "state": "running"}')
echo "gpu: $r"
[[ "$r" == *"'gpu' is not a sub-item of baseinfo (cpu, mem, nic, disk, net, fs, proc, host; taken and ignored: con) 400" ]] || fail "an unknown sub-item was not refused"
"$PROGS/offcpu_wait" 60 > /dev/null & PW=$!; CLEANUP_PIDS+=("$PW")   # three threads
snap() { # label -> cpu0 user ticks, lo rx bytes
  echo "$1 $(awk '$1 == "cpu0" {print $2}' /proc/stat) $(cat /sys/class/net/lo/statistics/rx_bytes)"
}
snap before > "$TMP/snap"
r=$(curl -s -w ' %{http_code}' -X PUT "$U/baseinfo" \
  -d "json={\"cmd\": {\"probe\": [\"cpu\", \"mem\", \"nic\", \"disk\", \"net\", \"fs\", \"host\", \"proc\"]},
  \"snoopers\": {\"proc_id\": [$PW]}, \"params\": {\"report_period\": 5}, \"state\": \"running\"}")
echo "baseinfo: $r"; [[ "$r" == "New config takes effect 200" ]] || fail "PUT /baseinfo refused"
sleep 12
curl -s "http://127.0.0.1:$EPORT/metrics" > "$TMP/metrics.txt" || fail "no /metrics"
snap after >> "$TMP/snap"
grep -E '^gala_gopher_(mem_total_kB|cpu_user_total_second\{cpu_num="0"|nic_rx_bytes\{dev_name="lo"|system_tcp_curr_estab|file_system_(Used|Free)\{MountOn="/"|disk_util)' "$TMP/metrics.txt" | head -12
$PY - "$TMP/metrics.txt" "$TMP/snap" "$(getconf CLK_TCK)" "$PW" <<'PY' || fail "the baseinfo metrics do not agree with the kernel's files"
import os, re, sys
m = {}
for line in open(sys.argv[1]):
    g = re.match(r'^(gala_gopher_\w+)(\{.*\})? (\S+)$', line)
    if g:
        m.setdefault(g.group(1), []).append((dict(re.findall(r'(\w+)="([^"]*)"', g.group(2) or "")), float(g.group(3))))
def val(name, **labels):
    v = [x for l, x in m.get(name, []) if all(l.get(k) == w for k, w in labels.items())]
    if len(v) != 1: print("FAIL:", name, labels, "has", len(v), "series"); sys.exit(1)
    return v[0]
snap = {l.split()[0]: list(map(int, l.split()[1:])) for l in open(sys.argv[2])}
hz = int(sys.argv[3])
memtotal = int(next(l.split()[1] for l in open("/proc/meminfo") if l.startswith("MemTotal:")))
ok = val("gala_gopher_mem_total_kB", infos="meminfo") == memtotal
u = val("gala_gopher_cpu_user_total_second", cpu_num="0")
ok &= snap["before"][0] / hz <= u <= snap["after"][0] / hz
rx = val("gala_gopher_nic_rx_bytes", dev_name="lo")
ok &= snap["before"][1] <= rx <= snap["after"][1]
ok &= val("gala_gopher_system_tcp_curr_estab", origin="/proc/net/snmp") >= 0
fsl = m.get("gala_gopher_file_system_Used", [])
ok &= len(fsl) >= 1   # a chroot lists no "/": any mounted file system will do
for l, x in fsl:
    st = os.statvfs(l["MountOn"])
    used = (st.f_blocks - st.f_bfree) * st.f_frsize / 1024
    ok &= abs(x - used) < 64 * 1024   # within 64 MiB of now
print("file systems:", [(l["MountOn"], l["File_sys"], x) for l, x in fsl][:4])
ok &= 0 <= val("gala_gopher_mem_util", infos="meminfo") <= 100
hl = [l for l, x in m.get("gala_gopher_host_value", []) if x == 1]
ok &= len(hl) == 1 and hl[0]["kversion"] == os.uname().release and hl[0]["cpu_num"] == str(os.cpu_count()) \
    and hl[0]["hostname"] == os.uname().nodename and hl[0]["memory_MB"] == str(memtotal // 1024) \
    and hl[0]["host_type"] in ("vm", "pm") and hl[0]["clock_ticks"] == str(hz)
print("host:", hl)
pw = sys.argv[4]
st = open("/proc/%s/stat" % pw).read().rsplit(")", 1)[1].split()
ok &= val("gala_gopher_proc_num_threads", tgid=pw) == int(st[17]) == 3
ok &= [l for l, x in m["gala_gopher_proc_num_threads"] if l["tgid"] == pw][0]["ppid"] == st[1]
ok &= val("gala_gopher_proc_utime_jiffies", tgid=pw) <= int(st[11])
ok &= val("gala_gopher_proc_vm_size", tgid=pw) > 0 and val("gala_gopher_proc_pm_size", tgid=pw) > 0
ok &= len([l for l, x in m.get("gala_gopher_proc_num_threads", [])]) == 1   # the selected process only
print("proc", pw, "threads", st[17], "ok" if ok else "FAIL")
disks = [d for d in os.listdir("/sys/block") if not d.startswith(("loop", "ram"))]
if disks:
    ok &= len(m.get("gala_gopher_disk_util", [])) >= 1
print("mem_total_kB", memtotal, "cpu0 user s", u, "lo rx", rx, "disks", disks, "->", "ok" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY
ok "baseinfo's cpu, mem, nic, disk, net and fs metrics agree with the kernel's files"
stop_agent || fail "agent exited with an error"

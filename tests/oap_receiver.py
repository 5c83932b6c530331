#!/usr/bin/python3
"""A stand-in for a SkyWalking OAP's eBPF receivers, for tests.

Serves EBPFProcessService, EBPFProfilingService, ContinuousProfilingService, MeterReportService,
LogReportService and SpanAttachedEventReportService from the project's own
proto/sw_*.proto (compiled at start with grpc_tools into a
descriptor set; message classes are built at run time, so no generated module
can shadow the standard library).  It answers the way the OAP does
(../shared/spec/skywalking-protocol.md section 3):

- process ids: lowercase hex sha256(processName + "_" + instanceId), with
  serviceId = base64(service) + ".1" and instanceId = serviceId + "_" +
  base64(instance); names truncated to 70 characters in reportProcesses;
- reportProcesses drops entries with neither hostProcess nor k8sProcess and
  echoes pid and entity in the downstream;
- keepAlive fails the whole call (INVALID_ARGUMENT) for an unknown layer;
- queryTasks only answers an agent whose processes were reported or kept
  alive within 5 minutes, and only tasks whose update time is strictly greater
  than latestUpdateTime; ON_CPU/OFF_CPU tasks give one command per process of
  the task's service with support_ebpf_profiling=true;
- collectProfilingData: the first message must carry `task`; a message with
  neither onCPU nor offCPU aborts the stream;
- collectBatch: a collection without service, instance and timestamp > 0 is
  dropped;
- LogReportService/collect: a LogData without service takes the one before it
  in the stream; the first one without service, or one without a body, is
  dropped (recorded with ok false and the reason);
- SpanAttachedEventReportService/collect: an event without a name, a start
  time or a trace context with a trace id is dropped likewise.

Tasks come from --tasks FILE (a JSON list, re-read at every query):
  {"taskId", "serviceName", "targetType", "startTime" (ms), "duration" (s),
   "updateTime" (ms), "labels" [..], "extension" (JSON text or "null")}
Everything received is appended to --record FILE as JSON lines:
  {"rpc": name, "t": ms, "ok": bool, "error": str, "req": message(s) as dicts}
where name is the method's ("collectBatch", ...), and for the two `collect`
methods "LogReportService/collect" and "SpanAttachedEventReportService/collect"
(one line per stream, "req" the list of its messages).
Continuous-profiling policies come from --policies FILE (a JSON list, re-read at
every query): {"serviceName", "uuid", "profiling" (the TARGET: {MONITOR: item}
object)}.  queryPolicies answers as the OAP does: the stored policy when its
UUID differs from the agent's, {"ServiceName", "UUID": ""} when the service has
none but the agent sent a UUID, nothing otherwise (no command when nothing
changed).  reportProfilingTask needs a target task and answers a
ContinuousProfilingReportTask command with a new TaskId, which the record
line carries as its "error" field.
With --auth TOKEN, calls without `authentication: TOKEN` metadata are refused.
"""
import argparse
import base64
import hashlib
import json
import os
import signal
import sys
import tempfile
import threading
import time
import uuid
from concurrent import futures

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from grpc_tools import protoc

LAYERS = {"UNDEFINED", "MESH", "GENERAL", "OS_LINUX", "K8S", "FAAS", "MESH_CP", "MESH_DP", "DATABASE",
          "CACHE", "BROWSER", "SO11Y_OAP", "SO11Y_SATELLITE", "MQ", "VIRTUAL_DATABASE", "VIRTUAL_MQ",
          "VIRTUAL_GATEWAY", "K8S_SERVICE", "MYSQL", "POSTGRESQL", "APISIX", "AWS_EKS", "NGINX", "KAFKA",
          "ROCKETMQ", "CLICKHOUSE", "ACTIVEMQ", "REDIS", "ELASTICSEARCH", "RABBITMQ", "MONGODB"}
NAME_MAX = 70


def now_ms():
    return int(time.time() * 1000)


def load_messages(proto_dir):
    files = sorted(f for f in os.listdir(proto_dir) if f.startswith("sw_") and f.endswith(".proto"))
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "sw.desc")
        rc = protoc.main(["protoc", "--proto_path=" + proto_dir, "--include_imports",
                          "--descriptor_set_out=" + out] + [os.path.join(proto_dir, f) for f in files])
        if rc:
            raise SystemExit("protoc failed on %s" % files)
        fds = descriptor_pb2.FileDescriptorSet()
        with open(out, "rb") as f:
            fds.ParseFromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for fd in fds.file:
        pool.Add(fd)
    factory = message_factory.MessageFactory(pool)
    return lambda name: factory.GetPrototype(pool.FindMessageTypeByName("skywalking.v3." + name))


def process_id(service, instance, process):
    b64 = lambda s: base64.b64encode((s or "_blank").encode()).decode()
    service_id = b64(service) + ".1"
    instance_id = service_id + "_" + b64(instance)
    return hashlib.sha256(((process or "_blank") + "_" + instance_id).encode()).hexdigest()


class Receiver:
    def __init__(self, args, M):
        self.args, self.M = args, M
        self.lock = threading.Lock()
        self.processes = {}   # id -> {"agent", "last", "service", "instance", "process", "labels", "support"}
        self.rec = open(args.record, "a", buffering=1) if args.record else None

    def record(self, rpc, ok, req, error=""):
        if not self.rec:
            return
        if isinstance(req, list):
            body = [json_format.MessageToDict(m, preserving_proto_field_name=True) for m in req]
        else:
            body = json_format.MessageToDict(req, preserving_proto_field_name=True)
        with self.lock:
            self.rec.write(json.dumps({"rpc": rpc, "t": now_ms(), "ok": ok, "error": error, "req": body}) + "\n")

    def auth(self, ctx, rpc, req):
        if not self.args.auth:
            return True
        md = dict(ctx.invocation_metadata())
        if md.get("authentication") == self.args.auth:
            return True
        self.record(rpc, False, req, "unauthenticated")
        ctx.abort(grpc.StatusCode.UNAUTHENTICATED, "bad or missing authentication")

    # ---- EBPFProcessService
    def report_processes(self, req, ctx):
        self.auth(ctx, "reportProcesses", req)
        out = self.M("EBPFReportProcessDownstream")()
        for p in req.processes:
            kind = p.WhichOneof("metadata")
            if kind is None:
                continue  # the OAP drops it: no downstream
            meta = getattr(p, kind)
            e = meta.entity
            svc, inst = e.serviceName[:NAME_MAX], e.instanceName[:NAME_MAX]
            pid_ = process_id(svc, inst, e.processName)
            props = {kv.key: kv.value for kv in meta.properties}
            with self.lock:
                self.processes[pid_] = {"agent": req.ebpfAgentID, "last": time.time(), "service": svc,
                                        "instance": inst, "process": e.processName, "labels": list(e.labels),
                                        "support": props.get("support_ebpf_profiling") == "true",
                                        "pid": meta.pid, "layer": e.layer}
            d = out.processes.add()
            d.processId = pid_
            echo = d.hostProcess if kind == "hostProcess" else d.k8sProcess
            echo.pid = meta.pid
            echo.entityMetadata.CopyFrom(e)
        self.record("reportProcesses", True, req)
        return out

    def keep_alive(self, req, ctx):
        self.auth(ctx, "keepAlive", req)
        for p in req.processes:
            if p.entityMetadata.layer not in LAYERS:
                self.record("keepAlive", False, req, "unknown layer " + p.entityMetadata.layer)
                ctx.abort(grpc.StatusCode.INVALID_ARGUMENT, "unknown layer " + p.entityMetadata.layer)
        for p in req.processes:
            e = p.entityMetadata
            pid_ = process_id(e.serviceName, e.instanceName, e.processName)
            props = {kv.key: kv.value for kv in p.properties}
            with self.lock:
                rec = self.processes.setdefault(pid_, {"service": e.serviceName, "instance": e.instanceName,
                                                       "process": e.processName, "labels": list(e.labels),
                                                       "layer": e.layer})
                rec.update(agent=req.ebpfAgentID, last=time.time(),
                           support=props.get("support_ebpf_profiling") == "true")
        self.record("keepAlive", True, req)
        return self.M("Commands")()

    # ---- EBPFProfilingService
    def load_tasks(self):
        if not self.args.tasks or not os.path.exists(self.args.tasks):
            return []
        try:
            with open(self.args.tasks) as f:
                return json.load(f)
        except (OSError, ValueError):
            return []

    def query_tasks(self, req, ctx):
        self.auth(ctx, "queryTasks", req)
        out = self.M("Commands")()
        with self.lock:
            mine = {k: v for k, v in self.processes.items()
                    if v.get("agent") == req.roverInstanceId and time.time() - v.get("last", 0) < 300}
        for t in self.load_tasks():
            if req.latestUpdateTime and not t["updateTime"] > req.latestUpdateTime:
                continue
            procs = [k for k, v in mine.items() if v["service"] == t["serviceName"]
                     and all(l in v["labels"] for l in t.get("labels", []))]
            if t["targetType"] in ("ON_CPU", "OFF_CPU"):
                groups = [[k] for k in procs if mine[k].get("support")]
            else:
                groups = [procs] if procs else []
            for g in groups:
                c = out.commands.add()
                c.command = "EBPFProfilingTaskQuery"
                for k, v in (("SerialNumber", str(uuid.uuid4())), ("TaskId", t["taskId"]),
                             ("ProcessId", ",".join(g)), ("TaskUpdateTime", str(t["updateTime"])),
                             ("TriggerType", "FIXED_TIME"), ("TargetType", t["targetType"]),
                             ("TaskStartTime", str(t["startTime"])),
                             ("ExtensionConfigJSON", t.get("extension", "null")),
                             ("FixedTriggerDuration", str(t["duration"]))):
                    a = c.args.add()
                    a.key, a.value = k, v
        self.record("queryTasks", True, req)
        return out

    def collect_profiling(self, it, ctx):
        msgs = []
        error = ""
        for m in it:
            if not msgs and not m.HasField("task"):
                error = "first message without task"
            if m.WhichOneof("profiling") is None:
                error = "message with neither onCPU nor offCPU"
                msgs.append(m)
                self.record("collectProfilingData", False, msgs, error)
                ctx.abort(grpc.StatusCode.INVALID_ARGUMENT, error)
            msgs.append(m)
        self.auth(ctx, "collectProfilingData", msgs)
        if self.args.delay_uploads:
            time.sleep(self.args.delay_uploads)
        self.record("collectProfilingData", not error, msgs, error)
        return self.M("Commands")()

    # ---- ContinuousProfilingService
    def load_policies(self):
        if not self.args.policies or not os.path.exists(self.args.policies):
            return {}
        try:
            with open(self.args.policies) as f:
                return {p["serviceName"]: p for p in json.load(f)}
        except (OSError, ValueError, KeyError, TypeError):
            return {}

    def query_policies(self, req, ctx):
        self.auth(ctx, "queryPolicies", req)
        stored, entries = self.load_policies(), []
        for q in req.policies:
            p = stored.get(q.serviceName)
            if p and p["uuid"] != q.uuid:
                entries.append({"ServiceName": q.serviceName, "UUID": p["uuid"], "Profiling": p["profiling"]})
            elif not p and q.uuid:
                entries.append({"ServiceName": q.serviceName, "UUID": ""})
        out = self.M("Commands")()
        if entries:
            c = out.commands.add()
            c.command = "ContinuousProfilingPolicyQuery"
            for k, v in (("SerialNumber", str(uuid.uuid4())), ("ServiceWithPolicyJSON", json.dumps(entries))):
                a = c.args.add()
                a.key, a.value = k, v
        self.record("queryPolicies", True, req)
        return out

    def report_profiling_task(self, req, ctx):
        self.auth(ctx, "reportProfilingTask", req)
        if req.WhichOneof("targetTask") is None:
            self.record("reportProfilingTask", False, req, "no target task")
            ctx.abort(grpc.StatusCode.INVALID_ARGUMENT, "no target task")
        task_id = "cp-" + uuid.uuid4().hex
        out = self.M("Commands")()
        c = out.commands.add()
        c.command = "ContinuousProfilingReportTask"
        for k, v in (("SerialNumber", str(uuid.uuid4())), ("TaskId", task_id)):
            a = c.args.add()
            a.key, a.value = k, v
        self.record("reportProfilingTask", True, req, task_id)
        return out

    # ---- MeterReportService
    def collect_batch(self, it, ctx):
        cols = list(it)
        self.auth(ctx, "collectBatch", cols)
        for c in cols:
            svc = inst = ""
            ts = 0
            for d in c.meterData:
                svc = d.service or svc
                inst = d.serviceInstance or inst
                ts = d.timestamp if d.timestamp > 0 else ts
            ok = bool(svc and inst and ts > 0)
            self.record("collectBatch", ok, c, "" if ok else "batch dropped: no service/instance/timestamp")
        return self.M("Commands")()

    # ---- LogReportService
    def collect_logs(self, it, ctx):
        logs = list(it)
        self.auth(ctx, "LogReportService/collect", logs)
        errors, service = [], ""
        for i, d in enumerate(logs):
            service = d.service or service
            if not service:
                errors.append("LogData %d dropped: no service (none before it in the stream)" % i)
            elif d.body.WhichOneof("content") is None:
                errors.append("LogData %d dropped: no body" % i)
        self.record("LogReportService/collect", not errors, logs, "; ".join(errors))
        return self.M("Commands")()

    # ---- SpanAttachedEventReportService
    def collect_events(self, it, ctx):
        events = list(it)
        self.auth(ctx, "SpanAttachedEventReportService/collect", events)
        errors = []
        for i, e in enumerate(events):
            if not e.event or not e.HasField("startTime"):
                errors.append("event %d dropped: no name or start time" % i)
            elif not e.HasField("traceContext") or not e.traceContext.traceId:
                errors.append("event %d dropped: no trace id" % i)
        self.record("SpanAttachedEventReportService/collect", not errors, events, "; ".join(errors))
        return self.M("Commands")()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--proto-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "proto"))
    ap.add_argument("--record")
    ap.add_argument("--tasks")
    ap.add_argument("--policies")
    ap.add_argument("--auth")
    ap.add_argument("--delay-uploads", type=float, default=0)
    ap.add_argument("--tls-cert", help="serve TLS with this certificate (PEM)")
    ap.add_argument("--tls-key")
    ap.add_argument("--tls-client-ca", help="require client certificates signed by this CA")
    args = ap.parse_args()
    M = load_messages(args.proto_dir)
    r = Receiver(args, M)

    def uu(fn, req):
        return grpc.unary_unary_rpc_method_handler(fn, request_deserializer=M(req).FromString,
                                                   response_serializer=lambda m: m.SerializeToString())

    def su(fn, req):
        return grpc.stream_unary_rpc_method_handler(fn, request_deserializer=M(req).FromString,
                                                    response_serializer=lambda m: m.SerializeToString())

    handlers = [
        grpc.method_handlers_generic_handler("skywalking.v3.EBPFProcessService", {
            "reportProcesses": uu(r.report_processes, "EBPFProcessReportList"),
            "keepAlive": uu(r.keep_alive, "EBPFProcessPingPkgList")}),
        grpc.method_handlers_generic_handler("skywalking.v3.EBPFProfilingService", {
            "queryTasks": uu(r.query_tasks, "EBPFProfilingTaskQuery"),
            "collectProfilingData": su(r.collect_profiling, "EBPFProfilingData")}),
        grpc.method_handlers_generic_handler("skywalking.v3.ContinuousProfilingService", {
            "queryPolicies": uu(r.query_policies, "ContinuousProfilingPolicyQuery"),
            "reportProfilingTask": uu(r.report_profiling_task, "ContinuousProfilingReport")}),
        grpc.method_handlers_generic_handler("skywalking.v3.MeterReportService", {
            "collectBatch": su(r.collect_batch, "MeterDataCollection")}),
        grpc.method_handlers_generic_handler("skywalking.v3.LogReportService", {
            "collect": su(r.collect_logs, "LogData")}),
        grpc.method_handlers_generic_handler("skywalking.v3.SpanAttachedEventReportService", {
            "collect": su(r.collect_events, "SpanAttachedEvent")}),
    ]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), handlers=handlers)
    if args.tls_cert:
        read = lambda p: open(p, "rb").read()
        creds = grpc.ssl_server_credentials([(read(args.tls_key), read(args.tls_cert))],
                                            root_certificates=read(args.tls_client_ca) if args.tls_client_ca else None,
                                            require_client_auth=bool(args.tls_client_ca))
        server.add_secure_port("127.0.0.1:%d" % args.port, creds)
    else:
        server.add_insecure_port("127.0.0.1:%d" % args.port)
    server.start()
    print("oap_receiver: listening on 127.0.0.1:%d" % args.port, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    server.stop(0)


if __name__ == "__main__":
    sys.exit(main())

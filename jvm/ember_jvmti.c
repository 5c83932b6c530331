/*
 * libember-jvmti.so: ember's JVMTI agent.  It runs inside a profiled JVM,
 * with that JVM's credentials, and writes the address range and name of
 * every piece of code the JVM generates to /tmp/perf-<pid>.map, where the
 * collector's broker reads perf maps (collector/broker.h):
 *
 *   START SIZE package.Class::method     a compiled method (C1 or C2)
 *   START SIZE Interpreter               code the JVM generated (stubs, the
 *                                        template interpreter), by its name
 *
 * The collector loads it only when profiling.java.agent is on, through the
 * HotSpot attach mechanism (collector/jattach.h).  It links nothing of
 * ember's: a JVM's address space is the target's, and the agent holds no
 * secret and trusts nothing of ember.
 *
 * Loading is idempotent: a second load into the same JVM (dlopen hands back
 * the same library) answers at once.  The agent stays until the JVM exits;
 * the map grows with the JVM's code, each line written once, as
 * perf-map-agent and the JVM's own -XX:+DumpPerfMapAtExit do.  A method
 * compiled again at another address gets a new line; the reader takes the
 * newest line for an address (symbolizer/perfmap.h), so reused code memory
 * is named by its latest owner.
 *
 * Methods inlined into a compiled method have no frame of their own: the
 * stretches of its code that run them get a line naming the whole scope,
 * outermost first, ';'-separated ("a.B::outer;a.B::middle;a.B::leaf"), which
 * the analyzer shows as that many frames.  Stacks name the callers above a
 * compiled method only when the JVM keeps frame pointers
 * (-XX:+PreserveFramePointer); without them, the sampled method and what is
 * inlined into it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jvmti.h>
#include <jvmticmlr.h>

#define EMBER_JVMTI_LINE 1024   /* the reader's longest name is 1024 bytes (symbolizer/perfmap.h) */

static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;
static int map_fd = -1;
static int loaded;              /* under map_lock */

static void write_line(const void *addr, jint size, const char *name)
{
	char line[EMBER_JVMTI_LINE + 64];
	ssize_t w;
	int n;

	if (!addr || size <= 0)
		return;
	n = snprintf(line, sizeof(line), "%lx %x %s\n", (unsigned long)addr, (unsigned)size, name);
	if (n <= 0)
		return;
	if ((size_t)n >= sizeof(line)) {
		/* Cut the name, keep the line whole. */
		n = sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	pthread_mutex_lock(&map_lock);
	/* A failed write (a full /tmp) loses the line: its code stays unnamed, [anon]+offset in stacks. */
	w = map_fd >= 0 ? write(map_fd, line, n) : -1;
	(void)w;
	pthread_mutex_unlock(&map_lock);
}

/* "Lcom/example/Foo;" -> "com.example.Foo" into out. */
static void class_name(const char *sig, char *out, size_t cap)
{
	size_t n = 0;

	if (!cap)
		return;
	if (sig && sig[0] == 'L')
		sig++;
	for (; sig && *sig && *sig != ';' && n + 1 < cap; sig++)
		out[n++] = *sig == '/' ? '.' : *sig;
	out[n] = 0;
}

static void method_name(jvmtiEnv *jvmti, jmethodID m, char *out, size_t cap)
{
	char *name = NULL, *csig = NULL, cls[EMBER_JVMTI_LINE / 2];
	jclass klass = NULL;

	snprintf(out, cap, "java::unknown");
	if ((*jvmti)->GetMethodName(jvmti, m, &name, NULL, NULL) != JVMTI_ERROR_NONE)
		return;
	if ((*jvmti)->GetMethodDeclaringClass(jvmti, m, &klass) == JVMTI_ERROR_NONE &&
	    (*jvmti)->GetClassSignature(jvmti, klass, &csig, NULL) == JVMTI_ERROR_NONE) {
		class_name(csig, cls, sizeof(cls));
		snprintf(out, cap, "%s::%s", cls, name);
	} else {
		snprintf(out, cap, "java::%s", name);
	}
	if (csig)
		(*jvmti)->Deallocate(jvmti, (unsigned char *)csig);
	(*jvmti)->Deallocate(jvmti, (unsigned char *)name);
}

/*
 * The scope at pc: its methods outermost first, ';'-separated (no Java class
 * or method name holds a ';': the analyzer splits such a name into frames).
 * When the chain does not fit, its outermost methods go.
 */
static void scope_name(jvmtiEnv *jvmti, const PCStackInfo *pi, char *out, size_t cap)
{
	char one[EMBER_JVMTI_LINE / 2];
	size_t len = 0;
	jint first = pi->numstackframes - 1;

	out[0] = 0;
	/* Innermost first, to know how many fit; then written outermost first. */
	for (jint k = 0; k < pi->numstackframes; k++) {
		method_name(jvmti, pi->methods[k], one, sizeof(one));
		if (len + strlen(one) + 1 >= cap) {
			first = k - 1;
			break;
		}
		len += strlen(one) + 1;
	}
	len = 0;
	for (jint k = first; k >= 0; k--) {
		method_name(jvmti, pi->methods[k], one, sizeof(one));
		len += (size_t)snprintf(out + len, cap - len, "%s%s", len ? ";" : "", one);
		if (len >= cap)
			break;
	}
}

static bool same_scope(const PCStackInfo *a, const PCStackInfo *b)
{
	return a->numstackframes == b->numstackframes &&
	       !memcmp(a->methods, b->methods, sizeof(jmethodID) * (size_t)a->numstackframes);
}

/*
 * A compiled method: its whole body under its own name, then the stretches
 * of it that run inlined methods under their scope's chain.  The code up to
 * a pc descriptor belongs to that descriptor's scope (a call's descriptor is
 * at its return address, which the analyzer looks up one byte back, inside
 * the call); later lines win in the reader, so a stretch's chain overrides
 * the body's name.
 */
static void JNICALL on_compiled(jvmtiEnv *jvmti, jmethodID method, jint size, const void *addr, jint map_len,
				const jvmtiAddrLocationMap *map, const void *compile_info)
{
	const jvmtiCompiledMethodLoadRecordHeader *h = compile_info;
	const char *end = (const char *)addr + size;
	char name[EMBER_JVMTI_LINE];

	(void)map_len;
	(void)map;
	method_name(jvmti, method, name, sizeof(name));
	write_line(addr, size, name);
	for (; h; h = h->next) {
		const jvmtiCompiledMethodLoadInlineRecord *r = (const void *)h;
		const char *from = addr;

		if (h->kind != JVMTI_CMLR_INLINE_INFO || !r->pcinfo)
			continue;
		for (jint i = 0; i < r->numpcs; i++) {
			const PCStackInfo *pi = &r->pcinfo[i];
			const char *pc = pi->pc;

			if (pc <= from || pc > end || pi->numstackframes < 1 || !pi->methods)
				continue;
			/* Descriptors of one scope in a row make one stretch. */
			if (i + 1 < r->numpcs && same_scope(pi, &r->pcinfo[i + 1]) && (const char *)r->pcinfo[i + 1].pc > pc)
				continue;
			if (pi->numstackframes > 1) {
				scope_name(jvmti, pi, name, sizeof(name));
				write_line(from, (jint)(pc - from), name);
			}
			from = pc;
		}
	}
}

static void JNICALL on_dynamic(jvmtiEnv *jvmti, const char *name, const void *addr, jint size)
{
	(void)jvmti;
	write_line(addr, size, name ? name : "java::generated");
}

static int open_map(void)
{
	char path[64];

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	/* A map left by an earlier process of this pid describes other code: start afresh.  Never through a
	 * link: /tmp is shared, and the file must be this JVM's own (the broker reads only such a file). */
	return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
}

static jint start(JavaVM *vm)
{
	jvmtiEventCallbacks cb;
	jvmtiCapabilities caps;
	jvmtiEnv *jvmti = NULL;
	jint rc = JNI_ERR;

	pthread_mutex_lock(&map_lock);
	if (loaded) {
		pthread_mutex_unlock(&map_lock);
		return JNI_OK;
	}
	if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK || !jvmti)
		goto out;
	memset(&caps, 0, sizeof(caps));
	caps.can_generate_compiled_method_load_events = 1;
	if ((*jvmti)->AddCapabilities(jvmti, &caps) != JVMTI_ERROR_NONE)
		goto out;
	map_fd = open_map();
	if (map_fd < 0)
		goto out;
	memset(&cb, 0, sizeof(cb));
	cb.CompiledMethodLoad = on_compiled;
	cb.DynamicCodeGenerated = on_dynamic;
	if ((*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof(cb)) != JVMTI_ERROR_NONE ||
	    (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_COMPILED_METHOD_LOAD, NULL) !=
		    JVMTI_ERROR_NONE ||
	    (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_DYNAMIC_CODE_GENERATED, NULL) !=
		    JVMTI_ERROR_NONE) {
		close(map_fd);
		map_fd = -1;
		goto out;
	}
	loaded = 1;
	rc = JNI_OK;
out:
	pthread_mutex_unlock(&map_lock);
	if (rc != JNI_OK)
		return rc;
	/* The code generated before the agent came: replayed through the same callbacks (outside the lock). */
	(*jvmti)->GenerateEvents(jvmti, JVMTI_EVENT_DYNAMIC_CODE_GENERATED);
	(*jvmti)->GenerateEvents(jvmti, JVMTI_EVENT_COMPILED_METHOD_LOAD);
	return JNI_OK;
}

/* Loaded into a running JVM (the collector's attach). */
JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM *vm, char *options, void *reserved)
{
	(void)options;
	(void)reserved;
	return start(vm);
}

/* Loaded at start-up (-agentpath:/usr/local/lib/ember/libember-jvmti.so), for a JVM that forbids attaching. */
JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved)
{
	(void)options;
	(void)reserved;
	return start(vm);
}

/*
 * spank_strata.c - Strata's SPANK plugin: sbatch/srun/salloc --storage-tier.
 *
 * Small and boring on purpose: it holds no policy. It hands the option to
 * the Go side and reports what the Go side says (docs/slurm.md):
 *
 *   submit host (sbatch, salloc, srun): the option callback runs
 *       `strata tier validate [--allowed-mount-prefix P] -- SPEC` and fails
 *       the command with its one-line message, before anything is queued.
 *   every allocated node, job prolog and epilog (PrologFlags=Alloc): one
 *       JSON line {"op":"prolog"|"epilog",...} to the node agent's unix
 *       socket, one JSON line back. A user error never fails the prolog
 *       (that would drain the node); an unreachable agent or a system error
 *       does (the node is broken).
 *   each job step on each node: init_post_opt (still root) asks the agent
 *       for the tier's status, and waits while the agent says the tier is
 *       still staging in (the stage-in runs after the prolog, so that a
 *       long one never fails the prolog); user_init exports STRATA_TIER_DIR
 *       (and ROMIO_HINTS); task_init fails the task with one line on its
 *       stderr when the tier is not usable.
 *   an agent that is not listening (it restarts) is waited for, up to
 *       agent_wait seconds, by every call.
 *
 * plugstack.conf arguments (all optional):
 *   strata=PATH          the strata binary (default /usr/bin/strata)
 *   socket=PATH          the agent's socket; %n is the node name
 *                        (default /run/strata/agent.sock)
 *   timeout=SECONDS      prolog and epilog wait for the agent (default 120)
 *   status_timeout=SECONDS  a step's status call (default 10)
 *   agent_wait=SECONDS   how long a call waits for an agent that does not
 *                        listen, e.g. while it restarts (default 30)
 *   mount_prefix=DIR     passed to validate as --allowed-mount-prefix
 *   default_mount=PATH   passed to validate as --default-mount (where tiers
 *                        are mounted, as the agents' mount_prefix says)
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slurm/spank.h>

SPANK_PLUGIN(strata, 1);

#define MAX_LINE (64 * 1024)	/* jobtier.MaxHookLine */
#define MAX_MSG 1024		/* longest message we relay */
#define VALIDATE_TIMEOUT 30	/* seconds for strata tier validate */
#define STATUS_WAIT 10		/* seconds the agent may hold a status reply (jobtier.MaxHookWait at most) */

static struct {
	char strata[256];
	char socket[256];
	char mount_prefix[256];
	char default_mount[256];
	int timeout;
	int status_timeout;
	int agent_wait;
} cfg = { "/usr/bin/strata", "/run/strata/agent.sock", "", "", 120, 10, 30 };

/* The option's value as this process's callback saw it, or NULL. */
static char *spec;

/* What the agent said about this step's tier (remote context): asked in
 * init_post_opt as root, used by user_init and task_init. */
static struct {
	int asked;
	int usable;
	uint32_t job;
	char tier_dir[4096];
	char romio_hints[4096];
	char reason[MAX_MSG];
} tier;

/* An agent reply (jobtier.HookReply). */
struct reply {
	int ok;
	int user_error;
	int pending;
	char error[MAX_MSG];
	char tier_dir[4096];
	char romio_hints[4096];
};

static int opt_cb(int val, const char *optarg, int remote);

static struct spank_option tier_opt = {
	"storage-tier", "SPEC",
	"a job tier: a file system made of the job's own nodes, "
	"e.g. capacity=200G (see docs/storage-tier.md)",
	1, 0, (spank_opt_cb_f) opt_cb
};

/* ---------- plugstack.conf arguments ---------- */

static int copy_arg(char *dst, size_t n, const char *v, const char *name)
{
	if (!*v || strlen(v) >= n) {
		slurm_error("spank_strata: plugstack.conf %s= needs a value shorter than %zu bytes", name, n);
		return -1;
	}
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

static int seconds_arg(int *dst, const char *v, const char *name)
{
	char *end;
	long n = strtol(v, &end, 10);
	if (!*v || *end || n < 1 || n > 86400) {
		slurm_error("spank_strata: plugstack.conf %s=%s: want a number of seconds, 1 to 86400", name, v);
		return -1;
	}
	*dst = (int) n;
	return 0;
}

/* parse_args reads the arguments once per process. Every callback calls
 * it: slurmstepd's job prolog and epilog do not call slurm_spank_init. */
static int parse_args(int ac, char **av)
{
	static int done, rc;
	if (done)
		return rc;
	done = 1;
	rc = -1;
	for (int i = 0; i < ac; i++) {
		const char *a = av[i];
		int bad;
		if (!strncmp(a, "strata=", 7))
			bad = copy_arg(cfg.strata, sizeof(cfg.strata), a + 7, "strata");
		else if (!strncmp(a, "socket=", 7))
			bad = copy_arg(cfg.socket, sizeof(cfg.socket), a + 7, "socket");
		else if (!strncmp(a, "mount_prefix=", 13))
			bad = copy_arg(cfg.mount_prefix, sizeof(cfg.mount_prefix), a + 13, "mount_prefix");
		else if (!strncmp(a, "timeout=", 8))
			bad = seconds_arg(&cfg.timeout, a + 8, "timeout");
		else if (!strncmp(a, "status_timeout=", 15))
			bad = seconds_arg(&cfg.status_timeout, a + 15, "status_timeout");
		else if (!strncmp(a, "agent_wait=", 11))
			bad = seconds_arg(&cfg.agent_wait, a + 11, "agent_wait");
		else if (!strncmp(a, "default_mount=", 14))
			bad = copy_arg(cfg.default_mount, sizeof(cfg.default_mount), a + 14, "default_mount");
		else {
			slurm_error("spank_strata: unknown plugstack.conf argument \"%s\" "
				    "(want strata=, socket=, timeout=, status_timeout=, agent_wait=, mount_prefix= or default_mount=)", a);
			bad = -1;
		}
		if (bad)
			return -1;
	}
	rc = 0;
	return 0;
}

/* ---------- small helpers ---------- */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ms_left is the time to deadline in milliseconds, at least 0. */
static int ms_left(double deadline)
{
	double d = (deadline - now()) * 1000;
	return d > 0 ? (int) d + 1 : 0;
}

/* one_line replaces newlines and other control characters by spaces and
 * trims trailing spaces. */
static void one_line(char *s)
{
	for (char *p = s; *p; p++)
		if ((unsigned char) *p < 0x20 || *p == 0x7f)
			*p = ' ';
	size_t n = strlen(s);
	while (n > 0 && s[n - 1] == ' ')
		s[--n] = 0;
}

/* ---------- submit time: strata tier validate ---------- */

/* validate runs the strata binary on the spec and returns 0 if it exits 0.
 * Otherwise it writes its stderr (the grammar's one line) into msg. */
static int validate(const char *v, char *msg, size_t msglen)
{
	int fds[2];
	if (access(cfg.strata, X_OK) < 0) {
		snprintf(msg, msglen, "storage-tier: cannot check the spec: cannot run %s: %s "
			 "(plugstack.conf strata= names the strata binary)", cfg.strata, strerror(errno));
		return -1;
	}
	if (pipe(fds) < 0) {
		snprintf(msg, msglen, "storage-tier: cannot check the spec: pipe: %s", strerror(errno));
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(msg, msglen, "storage-tier: cannot check the spec: fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		char *argv[10];
		int n = 0;
		argv[n++] = "strata";
		argv[n++] = "tier";
		argv[n++] = "validate";
		if (cfg.mount_prefix[0]) {
			argv[n++] = "--allowed-mount-prefix";
			argv[n++] = cfg.mount_prefix;
		}
		if (cfg.default_mount[0]) {
			argv[n++] = "--default-mount";
			argv[n++] = cfg.default_mount;
		}
		argv[n++] = "--";
		argv[n++] = (char *) v;
		argv[n] = NULL;
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
		}
		execv(cfg.strata, argv);
		/* only async-signal-safe calls here: srun and salloc are threaded */
		static const char failed[] = "storage-tier: cannot check the spec: exec of the strata binary failed\n";
		if (write(2, failed, sizeof(failed) - 1) < 0)
			_exit(126);
		_exit(127);
	}
	close(fds[1]);

	size_t got = 0;
	double deadline = now() + VALIDATE_TIMEOUT;
	msg[0] = 0;
	for (;;) {
		struct pollfd p = { .fd = fds[0], .events = POLLIN };
		int r = poll(&p, 1, ms_left(deadline));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			kill(pid, SIGKILL);
			snprintf(msg, msglen, "storage-tier: cannot check the spec: %s tier validate took more than %d s",
				 cfg.strata, VALIDATE_TIMEOUT);
			got = strlen(msg);
			break;
		}
		char buf[512];
		ssize_t k = read(fds[0], buf, sizeof(buf));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		size_t c = (size_t) k < msglen - 1 - got ? (size_t) k : msglen - 1 - got;
		memcpy(msg + got, buf, c);
		got += c;
		msg[got] = 0;
	}
	close(fds[0]);

	int st = 0;
	pid_t w;
	while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	if (w == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	one_line(msg);
	if (!msg[0]) {
		if (w < 0)
			snprintf(msg, msglen, "storage-tier: cannot check the spec: waitpid: %s", strerror(errno));
		else
			snprintf(msg, msglen, "storage-tier: %s tier validate failed with status 0x%x", cfg.strata, st);
	}
	return -1;
}

static int opt_cb(int val, const char *optarg, int remote)
{
	(void) val;
	char *v = strdup(optarg ? optarg : "");
	if (!v)
		return -1;
	free(spec);
	spec = v;
	if (remote)
		return 0;
	spank_context_t ctx = spank_context();
	if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR)
		return 0;
	char msg[MAX_MSG];
	if (validate(spec, msg, sizeof(msg)) == 0)
		return 0;
	slurm_error("%s", msg);
	return -1;
}

/* ---------- the agent socket: one JSON line each way ---------- */

/* put_json_string appends s as a JSON string to buf (of size n, used len). */
static void put_json_string(char *buf, size_t n, size_t *len, const char *s)
{
	char tmp[8];
	const char *add;
	if (*len + 1 < n)
		buf[(*len)++] = '"';
	for (; *s; s++) {
		unsigned char c = (unsigned char) *s;
		if (c == '"')
			add = "\\\"";
		else if (c == '\\')
			add = "\\\\";
		else if (c < 0x20 || c == 0x7f) {
			snprintf(tmp, sizeof(tmp), "\\u%04x", c);
			add = tmp;
		} else {
			tmp[0] = (char) c;
			tmp[1] = 0;
			add = tmp;
		}
		size_t k = strlen(add);
		if (*len + k + 1 >= n)
			break;
		memcpy(buf + *len, add, k);
		*len += k;
	}
	if (*len + 1 < n)
		buf[(*len)++] = '"';
	buf[*len] = 0;
}

/* build_request writes one request line (jobtier.HookRequest) into buf;
 * nodes and v may be NULL (status); wait > 0 lets the agent hold a status
 * reply that long while the tier is pending; restarts >= 0 is the job's
 * restart count (prolog and epilog). Returns -1 if it does not fit. */
static int build_request(char *buf, size_t n, const char *op, uint32_t job, uint32_t uid, uint32_t gid,
			 const char *nodes, const char *node, const char *v, int wait, long restarts)
{
	size_t len = (size_t) snprintf(buf, n, "{\"op\":\"%s\",\"job_id\":%u,\"uid\":%u,\"gid\":%u", op, job, uid, gid);
	if (nodes) {
		len += (size_t) snprintf(buf + len, n - len, ",\"nodes\":");
		put_json_string(buf, n, &len, nodes);
	}
	len += (size_t) snprintf(buf + len, n - len, ",\"node\":");
	put_json_string(buf, n, &len, node);
	if (v) {
		len += (size_t) snprintf(buf + len, n - len, ",\"spec\":");
		put_json_string(buf, n, &len, v);
	}
	if (wait > 0 && len < n)
		len += (size_t) snprintf(buf + len, n - len, ",\"wait\":%d", wait);
	if (restarts >= 0 && len < n)
		len += (size_t) snprintf(buf + len, n - len, ",\"restarts\":%ld", restarts);
	if (len + 3 >= n)
		return -1;
	buf[len++] = '}';
	buf[len++] = '\n';
	buf[len] = 0;
	return 0;
}

/* A tiny JSON reader for the flat reply object: strings, booleans, and
 * any other value skipped. */
struct json {
	const char *p, *end;
};

static void ws(struct json *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\r' || *j->p == '\n'))
		j->p++;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* read_string reads a JSON string into out (truncated to n-1 bytes; out
 * may be NULL to skip). */
static int read_string(struct json *j, char *out, size_t n)
{
	size_t len = 0;
	if (j->p >= j->end || *j->p != '"')
		return -1;
	j->p++;
	while (j->p < j->end && *j->p != '"') {
		unsigned int c = (unsigned char) *j->p++;
		char enc[4];
		int k = 1, uni = 0;
		if (c == '\\') {
			if (j->p >= j->end)
				return -1;
			char e = *j->p++;
			switch (e) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case '"': case '\\': case '/': c = (unsigned char) e; break;
			case 'u':
				if (j->end - j->p < 4)
					return -1;
				c = 0;
				for (int i = 0; i < 4; i++) {
					int h = hexval(j->p[i]);
					if (h < 0)
						return -1;
					c = c * 16 + (unsigned int) h;
				}
				j->p += 4;
				uni = 1;
				break;
			default:
				return -1;
			}
		}
		if (!uni || c < 0x80) {
			enc[0] = (char) c;	/* ASCII, an escape, or a raw UTF-8 byte */
		} else if (c < 0x800) {
			enc[0] = (char) (0xc0 | (c >> 6));
			enc[1] = (char) (0x80 | (c & 0x3f));
			k = 2;
		} else {	/* surrogates are passed as they are: messages only */
			enc[0] = (char) (0xe0 | (c >> 12));
			enc[1] = (char) (0x80 | ((c >> 6) & 0x3f));
			enc[2] = (char) (0x80 | (c & 0x3f));
			k = 3;
		}
		if (out && len + (size_t) k < n) {
			memcpy(out + len, enc, (size_t) k);
			len += (size_t) k;
		}
	}
	if (j->p >= j->end)
		return -1;
	j->p++;
	if (out && n)
		out[len] = 0;
	return 0;
}

static int skip_value(struct json *j, int depth)
{
	ws(j);
	if (j->p >= j->end || depth > 32)
		return -1;
	char c = *j->p;
	if (c == '"')
		return read_string(j, NULL, 0);
	if (c == '{' || c == '[') {
		char close = c == '{' ? '}' : ']';
		j->p++;
		ws(j);
		if (j->p < j->end && *j->p == close) {
			j->p++;
			return 0;
		}
		for (;;) {
			if (c == '{') {
				ws(j);
				if (read_string(j, NULL, 0) < 0)
					return -1;
				ws(j);
				if (j->p >= j->end || *j->p++ != ':')
					return -1;
			}
			if (skip_value(j, depth + 1) < 0)
				return -1;
			ws(j);
			if (j->p >= j->end)
				return -1;
			if (*j->p == ',') {
				j->p++;
				continue;
			}
			if (*j->p++ != close)
				return -1;
			return 0;
		}
	}
	/* true, false, null, numbers */
	const char *start = j->p;
	while (j->p < j->end && !strchr(",}] \t\r\n", *j->p))
		j->p++;
	return j->p > start ? 0 : -1;
}

static int read_bool(struct json *j, int *out)
{
	if (j->end - j->p >= 4 && !strncmp(j->p, "true", 4)) {
		*out = 1;
		j->p += 4;
		return 0;
	}
	if (j->end - j->p >= 5 && !strncmp(j->p, "false", 5)) {
		*out = 0;
		j->p += 5;
		return 0;
	}
	return skip_value(j, 0);	/* null or a wrong type: keep the default */
}

static int parse_reply(const char *line, size_t n, struct reply *r)
{
	struct json j = { line, line + n };
	memset(r, 0, sizeof(*r));
	ws(&j);
	if (j.p >= j.end || *j.p++ != '{')
		return -1;
	ws(&j);
	if (j.p < j.end && *j.p == '}')
		return 0;
	for (;;) {
		char key[32];
		ws(&j);
		if (read_string(&j, key, sizeof(key)) < 0)
			return -1;
		ws(&j);
		if (j.p >= j.end || *j.p++ != ':')
			return -1;
		ws(&j);
		int rc;
		if (!strcmp(key, "ok"))
			rc = read_bool(&j, &r->ok);
		else if (!strcmp(key, "user_error"))
			rc = read_bool(&j, &r->user_error);
		else if (!strcmp(key, "pending"))
			rc = read_bool(&j, &r->pending);
		else if (!strcmp(key, "error") && j.p < j.end && *j.p == '"')
			rc = read_string(&j, r->error, sizeof(r->error));
		else if (!strcmp(key, "tier_dir") && j.p < j.end && *j.p == '"')
			rc = read_string(&j, r->tier_dir, sizeof(r->tier_dir));
		else if (!strcmp(key, "romio_hints") && j.p < j.end && *j.p == '"')
			rc = read_string(&j, r->romio_hints, sizeof(r->romio_hints));
		else
			rc = skip_value(&j, 0);
		if (rc < 0)
			return -1;
		ws(&j);
		if (j.p >= j.end)
			return -1;
		if (*j.p == ',') {
			j.p++;
			continue;
		}
		return *j.p == '}' ? 0 : -1;
	}
}

/* socket_path expands %n (node name) and %% in cfg.socket. */
static int socket_path(char *out, size_t n, const char *node)
{
	size_t len = 0;
	for (const char *p = cfg.socket; *p; p++) {
		const char *add = p;
		size_t k = 1;
		if (p[0] == '%' && p[1] == 'n') {
			add = node;
			k = strlen(node);
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			p++;
		}
		if (len + k >= n)
			return -1;
		memcpy(out + len, add, k);
		len += k;
	}
	out[len] = 0;
	return 0;
}

/* connect_agent connects to the agent's socket at path. While nothing
 * listens there (no socket file, or refused: the agent restarts) it tries
 * again every 200 ms for up to wait seconds, saying so once in slurmd's
 * log. Returns the socket, or -1 with the reason in err. */
static int connect_agent(const char *path, int wait, int timeout, const char *what, char *err, size_t errlen)
{
	double deadline = now() + wait;
	int waited = 0;
	for (;;) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			snprintf(err, errlen, "socket: %s", strerror(errno));
			return -1;
		}
		struct timeval tv = { .tv_sec = timeout };
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));	/* bounds connect too */
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		memcpy(sa.sun_path, path, strlen(path) + 1);
		if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0) {
			if (waited)
				slurm_info("spank_strata: %s: the strata agent at %s answers again", what, path);
			return fd;
		}
		int e = errno;
		close(fd);
		if ((e != ENOENT && e != ECONNREFUSED) || ms_left(deadline) == 0) {
			if (waited)
				snprintf(err, errlen, "cannot reach the strata agent at %s: %s (waited %d s for it)", path, strerror(e), wait);
			else
				snprintf(err, errlen, "cannot reach the strata agent at %s: %s", path, strerror(e));
			return -1;
		}
		if (!waited) {
			/* an error: a job step's info lines do not reach slurmd's log */
			slurm_error("spank_strata: %s: the strata agent at %s does not answer (%s); waiting up to %d s for it",
				    what, path, strerror(e), wait);
			waited = 1;
		}
		poll(NULL, 0, 200);
	}
}

/* call_agent sends one request line to this node's agent and reads one
 * reply line, within timeout seconds once connected; it waits up to wait
 * seconds for an agent that does not listen. what names the call in log
 * lines. On failure it writes why into err. */
static int call_agent(const char *node, const char *req, int timeout, int wait, const char *what,
		      struct reply *r, char *err, size_t errlen)
{
	char path[sizeof(((struct sockaddr_un *) 0)->sun_path)];
	if (socket_path(path, sizeof(path), node) < 0) {
		snprintf(err, errlen, "agent socket path %s is too long for node %s", cfg.socket, node);
		return -1;
	}
	int fd = connect_agent(path, wait, timeout, what, err, errlen);
	if (fd < 0)
		return -1;
	double deadline = now() + timeout;
	size_t len = strlen(req), off = 0;
	while (off < len) {
		ssize_t k = send(fd, req + off, len - off, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			snprintf(err, errlen, "send to the strata agent at %s: %s", path, strerror(errno));
			close(fd);
			return -1;
		}
		off += (size_t) k;
	}

	char *line = malloc(MAX_LINE);
	size_t got = 0;
	int rc = -1;
	if (!line) {
		snprintf(err, errlen, "out of memory");
		close(fd);
		return -1;
	}
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int k = poll(&p, 1, ms_left(deadline));
		if (k < 0 && errno == EINTR)
			continue;
		if (k == 0) {
			snprintf(err, errlen, "the strata agent at %s did not answer within %d s", path, timeout);
			break;
		}
		ssize_t n = k < 0 ? -1 : recv(fd, line + got, MAX_LINE - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(err, errlen, "read from the strata agent at %s: %s", path, strerror(errno));
			break;
		}
		if (n == 0) {
			snprintf(err, errlen, "the strata agent at %s closed the connection without an answer", path);
			break;
		}
		char *nl = memchr(line + got, '\n', (size_t) n);
		got += (size_t) n;
		if (nl) {
			if (parse_reply(line, (size_t) (nl - line), r) == 0)
				rc = 0;
			else
				snprintf(err, errlen, "the strata agent at %s sent a malformed reply", path);
			break;
		}
		if (got == MAX_LINE) {
			snprintf(err, errlen, "the strata agent at %s sent a reply longer than %d bytes", path, MAX_LINE);
			break;
		}
	}
	free(line);
	close(fd);
	if (rc == 0)
		one_line(r->error);
	return rc;
}

/* ---------- prolog and epilog (job_script context, root) ---------- */

static int job_script(spank_t sp, const char *op)
{
	char *v = NULL;
	if (spank_option_getopt(sp, &tier_opt, &v) != ESPANK_SUCCESS || !v || !*v)
		return 0;	/* no --storage-tier: nothing to do */
	uint32_t job = 0;
	uid_t uid = 0;
	gid_t gid = 0;
	spank_get_item(sp, S_JOB_ID, &job);
	spank_get_item(sp, S_JOB_UID, &uid);
	spank_get_item(sp, S_JOB_GID, &gid);
	const char *node = getenv("SLURMD_NODENAME");
	const char *nodes = getenv("SLURM_JOB_NODELIST");
	if (!nodes)
		nodes = getenv("SLURM_NODELIST");
	if (!node || !nodes) {
		slurm_error("spank_strata: %s of job %u: SLURMD_NODENAME or SLURM_JOB_NODELIST missing", op, job);
		return -1;
	}

	char req[MAX_LINE];
	/* Which run of a requeued job this is, for the tier registry. */
	long restarts = -1;
	const char *rc = getenv("SLURM_JOB_RESTART_COUNT");
	if (rc && *rc) {
		char *end = NULL;
		long r = strtol(rc, &end, 10);
		if (end && !*end && r >= 0 && r <= 1000000)
			restarts = r;
	}
	if (build_request(req, sizeof(req), op, job, uid, gid, nodes, node, v, 0, restarts) < 0) {
		slurm_error("spank_strata: %s of job %u: request longer than %d bytes", op, job, MAX_LINE);
		return -1;
	}
	struct reply r;
	char err[MAX_MSG], what[320];
	snprintf(what, sizeof(what), "%s of job %u on %s", op, job, node);
	int wait = cfg.agent_wait < cfg.timeout ? cfg.agent_wait : cfg.timeout;
	if (call_agent(node, req, cfg.timeout, wait, what, &r, err, sizeof(err)) < 0) {
		slurm_error("spank_strata: %s of job %u on %s: %s", op, job, node, err);
		return -1;	/* a node whose agent does not answer is broken */
	}
	if (r.ok)
		return 0;
	if (r.user_error) {
		/* The job's fault: the job fails (task_init), the node stays. */
		slurm_info("spank_strata: %s of job %u on %s: user error: %s", op, job, node, r.error);
		return 0;
	}
	slurm_error("spank_strata: %s of job %u on %s: %s", op, job, node, r.error[0] ? r.error : "the agent failed");
	return -1;
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
	if (parse_args(ac, av) < 0)
		return -1;
	return job_script(sp, "prolog");
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	if (parse_args(ac, av) < 0)
		return -1;
	return job_script(sp, "epilog");
}

/* ---------- job steps (remote context) ---------- */

/* step_node is this node's Slurm name in a job step: slurmstepd's own
 * SLURMD_NODENAME. Not the job's: srun copies its environment into the
 * step, so an srun inside a batch script carries the batch node's name. */
static int step_node(char *out, int n)
{
	const char *e = getenv("SLURMD_NODENAME");
	if (e && *e && (int) strlen(e) < n) {
		memcpy(out, e, strlen(e) + 1);
		return 0;
	}
	return -1;
}

/* init_post_opt runs in slurmstepd as root, before user_init drops the
 * effective uid to the job's user: the only place in a step that can reach
 * the root-only socket. */
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	if (parse_args(ac, av) < 0)
		return -1;
	if (spank_context() != S_CTX_REMOTE || !spec || !*spec)
		return 0;
	uid_t uid = 0;
	gid_t gid = 0;
	char node[256], req[1024], err[MAX_MSG];
	struct reply r;
	spank_get_item(sp, S_JOB_ID, &tier.job);
	spank_get_item(sp, S_JOB_UID, &uid);
	spank_get_item(sp, S_JOB_GID, &gid);
	tier.asked = 1;
	if (step_node(node, sizeof(node)) < 0) {
		snprintf(tier.reason, sizeof(tier.reason), "this node's Slurm name is unknown (no SLURMD_NODENAME)");
		return 0;
	}
	char what[320];
	snprintf(what, sizeof(what), "status of job %u on %s", tier.job, node);
	build_request(req, sizeof(req), "status", tier.job, uid, gid, NULL, node, NULL, STATUS_WAIT, -1);
	/* While the tier stages in, the agent holds each answer up to
	 * STATUS_WAIT seconds and says pending: ask again, for as long as it
	 * takes. The job's time limit bounds it; a cancelled job's stage-in is
	 * stopped by the agent, which then answers not usable. */
	for (int said = 0;; said = 1) {
		if (call_agent(node, req, cfg.status_timeout + STATUS_WAIT, cfg.agent_wait, what, &r, err, sizeof(err)) < 0) {
			snprintf(tier.reason, sizeof(tier.reason), "%s", err);
			slurm_error("spank_strata: status of job %u on %s: %s", tier.job, node, err);
			return 0;
		}
		if (r.ok || !r.pending)
			break;
		if (!said)
			slurm_info("spank_strata: job %u on %s waits for its storage tier: %s", tier.job, node, r.error);
	}
	if (!r.ok) {
		snprintf(tier.reason, sizeof(tier.reason), "%s", r.error[0] ? r.error : "the agent gave no reason");
		return 0;
	}
	if (!r.tier_dir[0]) {
		snprintf(tier.reason, sizeof(tier.reason), "the agent gave no tier directory");
		return 0;
	}
	tier.usable = 1;
	memcpy(tier.tier_dir, r.tier_dir, sizeof(tier.tier_dir));
	memcpy(tier.romio_hints, r.romio_hints, sizeof(tier.romio_hints));
	return 0;
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	(void) ac;
	(void) av;
	if (!tier.asked || !tier.usable)
		return 0;
	spank_setenv(sp, "STRATA_TIER_DIR", tier.tier_dir, 1);
	if (tier.romio_hints[0])
		spank_setenv(sp, "ROMIO_HINTS", tier.romio_hints, 1);
	return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	(void) sp;
	(void) ac;
	(void) av;
	if (!tier.asked || tier.usable)
		return 0;
	fprintf(stderr, "strata: storage tier for job %u is not usable: %s\n", tier.job, tier.reason);
	fflush(stderr);
	return -1;
}

/* ---------- init and exit ---------- */

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	if (parse_args(ac, av) < 0)
		return -1;
	if (spank_context() == S_CTX_SLURMD)
		return 0;
	if (spank_option_register(sp, &tier_opt) != ESPANK_SUCCESS) {
		slurm_error("spank_strata: cannot register --storage-tier");
		return -1;
	}
	return 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	(void) sp;
	(void) ac;
	(void) av;
	free(spec);
	spec = NULL;
	return 0;
}

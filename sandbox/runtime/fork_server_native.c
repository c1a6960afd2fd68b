/* The fork servers of interpreters without (usable) system calls of their own: R, racket and node
 * (node's through fork_server_node.c, which calls sandbox_fork_serve).
 *
 * fork_server.R loads this library with dyn.load and calls sandbox_fork_server() through .C;
 * fork_server.rkt loads it with ffi-lib and calls sandbox_fork_serve(). (Built on the host with gcc
 * when an executor starts: sandbox/runtime_build.py; copied into the slot root-only and read-only like
 * every runtime file.) Either call is fork_server.rb's serve loop in C: it never returns in the server,
 * and returns in each forked child only once the child is confined and has received its program.
 *
 * Started once per slot by the template zygote (runtime/fork_servers.py), which exec'd the language's
 * fork_server argv + <uid> <scratch> <syscall numbers> as root of the slot with no_new_privs, an empty
 * bounding set, the zygote's seccomp filters and the program filter (no SIGKILL can be sent), a
 * scrubbed environment, only CAP_SETUID, CAP_SETGID and CAP_SYS_ADMIN, and the zygote's end of a
 * SOCK_SEQPACKET socket on fd 3. Like the zygote we never see a byte of any request: only "fork one
 * child with these fds" ("F <extras 0|1> <source file> <resource:soft:hard>..." + fds stdin, stdout,
 * stderr, channel), answered "P <pid>" (or "E <reason>"), and, unprompted when a child is reaped,
 * "X <pid> <status> <utime> <stime> <maxrss>" from wait4, which the zygote relays to the supervisor A
 * like its own children's.
 *
 * The child confines itself before the program exists, step by step as fork_server.rb's child does:
 * oom_score_adj 1000, a new IPC namespace, its own pipes on 0/1/2 (+ the channel) and every other fd
 * of ours closed (the interpreter's own descriptors excepted; its epoll instances and pipes -- racket's
 * poll set and wake-up pipe -- replaced by fresh ones, so that nothing of them is shared with the server
 * or another child), the rlimits the zygote sent (clamped there, as for a B), setgroups([]),
 * setresgid/setresuid to the slot's uid, capset to nothing (inheritable included), cwd the scratch
 * directory. It is born in the programs' cgroups. Only then does it read the source (and the request's
 * files and run arguments) from its channel and write them as B does.
 *
 * R then runs the program as `Rscript --vanilla main.R args...` would: the file R reads its script
 * from (its console; R reads it line by line and has consumed fork_server.R up to its last line) now
 * reads the program from its start, commandArgs() names it (--file=main.R, --args ...), and the
 * session's temporary directory is a fresh one of the slot uid (the server's is removed before it
 * serves). A top-level error then prints "Error ... Execution halted" and exits 1, quit(status=) exits
 * with its status, warnings are printed, output is flushed at exit: R's own code, not ours (but for the
 * session directory's removal at exit: fork_server_r.c, loaded by fork_server.R first). Racket gets
 * the run arguments back and goes on with its own command line (`-u main.rkt`: fork_server.rkt).
 *
 * Slot mode "container" (the last argument; the docker backend: no namespaces, no CAP_SYS_ADMIN): the
 * child does what a B does there -- no IPC namespace of its own (the container's; the sweep removes the
 * uid's objects), and a scratch directory of its own, <scratch>/<pid> (0700, the slot uid's: the server
 * holds CAP_CHOWN), its cwd, and in every environment variable that names the server's scratch (HOME,
 * TMPDIR, and R's PWD and R_LIBS_USER, set from them when R started) the child's directory instead, as
 * the run command started there would have them (R's session directory is then made there too).
 *
 * Standard C and Linux only; R's three symbols below are weak (resolved in R at dyn.load, absent in
 * racket).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sched.h>
#include <unistd.h>

/* R's, when R loaded us (weak: racket loads us too, and has none of them). */
extern char *R_TempDir __attribute__((weak));
extern void R_reInitTempDir(int die_on_fail) __attribute__((weak));
extern void R_set_command_line_arguments(int argc, char **argv) __attribute__((weak));

#define ZYGOTE 3
#define MAX_LIVE 1024
#define MAX_OWN 32
#define MAX_LIMITS 16

static uid_t slot_uid;
static const char *scratch;
static int own_scratch;                 /* slot mode "container": each child makes <scratch>/<pid> */
static const char *const *server_argv;  /* R's command line up to "--args" (ours: the server's) */
static int server_argc;
static dev_t console_dev;               /* the file R reads its script from: fork_server.R */
static ino_t console_ino;
static int console_fd = -1;
static int own_fds[MAX_OWN];            /* the interpreter's descriptors when we started: a child keeps them */
static int n_own;
static ino_t own_ino[MAX_OWN];          /* what each was then (a pipe the interpreter re-makes at fork differs) */
static pid_t live_pid[MAX_LIVE];
static int live_fd[MAX_LIVE];
static int n_live;
static char *child_source;              /* in a child: its source file and run arguments */
static char **child_args;
static size_t child_nargs;

static void reply(const char *text) {
    if (send(ZYGOTE, text, strlen(text), MSG_NOSIGNAL) < 0)
        _exit(0);                       /* the zygote is gone: so are we */
}

/* A failed step of the child's confinement (fork_server.rb: "sandbox: <error>", exit 122). */
static void die(const char *what) {
    dprintf(2, "sandbox: %s: %s\n", what, strerror(errno));
    _exit(122);
}

static int safe_name(const char *name) {
    if (!*name || *name == '/')
        return 0;
    const char *part = name;
    for (;;) {
        const char *end = strchrnul(part, '/');
        size_t len = (size_t)(end - part);
        if (len == 0 || (len == 1 && part[0] == '.') || (len == 2 && part[0] == '.' && part[1] == '.'))
            return 0;
        if (!*end)
            return 1;
        part = end + 1;
    }
}

static void read_exact(int fd, void *buf, size_t count) {
    char *p = buf;
    while (count) {
        ssize_t got = read(fd, p, count);
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) {   /* the channel may be non-blocking */
            struct pollfd pfd = {fd, POLLIN, 0};
            poll(&pfd, 1, -1);
            continue;
        }
        if (got <= 0)
            _exit(123);
        p += got;
        count -= (size_t)got;
    }
}

/* One frame of the channel: 4-byte big-endian length + body (runtime/framing.py). */
static char *frame(int fd, size_t *size) {
    unsigned char head[4];
    read_exact(fd, head, 4);
    *size = (size_t)head[0] << 24 | (size_t)head[1] << 16 | (size_t)head[2] << 8 | head[3];
    char *body = malloc(*size + 1);
    if (!body)
        _exit(123);
    read_exact(fd, body, *size);
    body[*size] = 0;
    return body;
}

static uint64_t be(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* The request's files and run arguments (runtime/scratch_files.py's pack_extras). */
struct extras {
    size_t nfiles, nargs;
    char **names, **contents, **args;
    size_t *sizes;
};

static const unsigned char *take(const char *body, size_t size, size_t *pos, size_t n) {
    if (n > size - *pos)
        _exit(123);
    const unsigned char *p = (const unsigned char *)body + *pos;
    *pos += n;
    return p;
}

static char *take_string(const char *body, size_t size, size_t *pos, size_t n) {
    const unsigned char *p = take(body, size, pos, n);
    char *s = malloc(n + 1);
    if (!s)
        _exit(123);
    memcpy(s, p, n);
    s[n] = 0;
    return s;
}

static void unpack_extras(const char *body, size_t size, struct extras *x) {
    size_t pos = 0;
    x->nfiles = be(take(body, size, &pos, 4), 4);
    if (x->nfiles > size)
        _exit(123);
    x->names = calloc(x->nfiles + 1, sizeof(char *));
    x->contents = calloc(x->nfiles + 1, sizeof(char *));
    x->sizes = calloc(x->nfiles + 1, sizeof(size_t));
    for (size_t i = 0; i < x->nfiles; i++) {
        x->names[i] = take_string(body, size, &pos, be(take(body, size, &pos, 4), 4));
        uint64_t len = be(take(body, size, &pos, 8), 8);
        if (len > size)
            _exit(123);
        x->sizes[i] = len;
        x->contents[i] = take_string(body, size, &pos, len);
    }
    x->nargs = be(take(body, size, &pos, 4), 4);
    if (x->nargs > size)
        _exit(123);
    x->args = calloc(x->nargs + 1, sizeof(char *));
    for (size_t i = 0; i < x->nargs; i++)
        x->args[i] = take_string(body, size, &pos, be(take(body, size, &pos, 4), 4));
}

static void cannot_write(void) {
    dprintf(2, "sandbox: cannot write the request's files: %s\n", strerror(errno));
    _exit(126);
}

/* As fork_server.rb's write_files: parent directories 0755, an existing name replaced, no link followed. */
static void write_file(const char *name, const char *content, size_t size) {
    if (!safe_name(name)) {
        dprintf(2, "sandbox: unsafe file name \"%.100s\"\n", name);
        _exit(126);
    }
    char *dir = strdup(name);
    for (char *slash = strchr(dir, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = 0;
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
            cannot_write();
        *slash = '/';
    }
    free(dir);
    struct stat st;
    if (lstat(name, &st) == 0 && unlink(name) < 0)
        cannot_write();
    int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        cannot_write();
    for (size_t done = 0; done < size;) {
        ssize_t n = write(fd, content + done, size - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            cannot_write();
        done += (size_t)n;
    }
    close(fd);
}

static int kept(int fd, int chan) {
    if (fd <= 2 || fd == chan)
        return 1;
    for (int i = 0; i < n_own; i++)
        if (own_fds[i] == fd)
            return 1;
    return 0;
}

/* The interpreter's own epoll instances and pipes (racket's I/O layer: its poll set and wake-up pipe)
 * would be shared with the server and every other child: the child gets fresh ones, same numbers and
 * flags (the server registered nothing in them: it waits in serve(), never in the interpreter). */
static void renew_to(int fresh, int fd, int fd_flags, int fl_flags) {
    if (fresh < 0 || dup3(fresh, fd, (fd_flags & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0 ||
        fcntl(fd, F_SETFL, fl_flags & (O_NONBLOCK | O_APPEND)) < 0)
        die("renew own descriptors");
}

static int own_inode(int i) {
    struct stat st;
    return fstat(own_fds[i], &st) == 0 && st.st_ino == own_ino[i];
}

static void renew_own_fds(void) {
    char links[MAX_OWN][64];
    int fd_flags[MAX_OWN], fl_flags[MAX_OWN], done[MAX_OWN] = {0};
    for (int i = 0; i < n_own; i++) {
        char path[64];
        ssize_t len;
        snprintf(path, sizeof path, "/proc/self/fd/%d", own_fds[i]);
        if ((len = readlink(path, links[i], sizeof links[i] - 1)) < 0 ||
            (fd_flags[i] = fcntl(own_fds[i], F_GETFD)) < 0 || (fl_flags[i] = fcntl(own_fds[i], F_GETFL)) < 0)
            die("own descriptors");
        links[i][len] = 0;
    }
    for (int i = 0; i < n_own; i++) {
        if (done[i])
            continue;
        if (strcmp(links[i], "anon_inode:[eventpoll]") == 0) {
            int fresh = epoll_create1(0);
            renew_to(fresh, own_fds[i], fd_flags[i], fl_flags[i]);
            close(fresh);
        } else if (strcmp(links[i], "anon_inode:[eventfd]") == 0) {   /* node's event loops' wake-ups */
            int fresh = eventfd(0, 0);
            renew_to(fresh, own_fds[i], fd_flags[i], fl_flags[i]);
            close(fresh);
        } else if (strncmp(links[i], "pipe:", 5) == 0 && own_inode(i)) {   /* not one made at fork (libuv's lock) */
            int ends[2];
            if (pipe(ends) < 0)
                die("pipe");
            for (int j = i; j < n_own; j++)          /* every end of that pipe we hold: this pipe's */
                if (!done[j] && strcmp(links[j], links[i]) == 0) {
                    renew_to(ends[(fl_flags[j] & O_ACCMODE) == O_WRONLY], own_fds[j], fd_flags[j], fl_flags[j]);
                    done[j] = 1;
                }
            close(ends[0]);
            close(ends[1]);
        }
        done[i] = 1;
    }
}

/* Container mode, in the child: every environment variable that is the server's scratch or a path below it
 * names the child's directory instead. */
static void rebase_environment(const char *dir) {
    extern char **environ;
    size_t n = strlen(scratch);
    char *names[256], *values[256];
    int count = 0;
    for (char **e = environ; *e && count < 256; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq || strncmp(eq + 1, scratch, n) != 0 || (eq[1 + n] != 0 && eq[1 + n] != '/'))
            continue;
        names[count] = strndup(*e, (size_t)(eq - *e));
        values[count] = malloc(strlen(dir) + strlen(eq + 1 + n) + 1);
        if (!names[count] || !values[count])
            die("malloc");
        sprintf(values[count], "%s%s", dir, eq + 1 + n);
        count++;
    }
    for (int i = 0; i < count; i++)
        if (setenv(names[i], values[i], 1) < 0)
            die("setenv");
}

/* In the child, before the program exists: confine, then receive the program (child_source, child_args). */
static void child(int ios[4], int extras, const char *source_file, long long (*limits)[3], int nlimits) {
    int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);  /* the OOM killer takes the program */
    if (fd < 0 || write(fd, "1000", 4) != 4)
        die("oom_score_adj");
    close(fd);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", scratch);
    if (own_scratch) {
        snprintf(dir, sizeof dir, "%s/%d", scratch, (int)getpid());
        if (mkdir(dir, 0700) < 0)
            die("mkdir");
        if (chown(dir, slot_uid, slot_uid) < 0)
            die("chown");
    } else if (unshare(CLONE_NEWIPC) < 0) {
        die("unshare");
    }
    for (int i = 0; i < 3; i++)
        if (dup2(ios[i], i) < 0)
            die("dup2");
    int chan = ios[3];
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        die("/proc/self/fd");
    int dfd = dirfd(d), fds[4096], n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 4096;)
        if (e->d_name[0] != '.')
            fds[n++] = atoi(e->d_name);
    for (int i = 0; i < n; i++)                /* the zygote's socket, the pidfds, every other fd of ours */
        if (fds[i] != dfd && !kept(fds[i], chan))
            close(fds[i]);
    closedir(d);
    n_live = 0;
    renew_own_fds();
    for (int i = 0; i < nlimits; i++) {
        struct rlimit rl = {(rlim_t)limits[i][1], (rlim_t)limits[i][2]};
        if (setrlimit((int)limits[i][0], &rl) < 0)
            die("setrlimit");
    }
    if (setgroups(0, NULL) < 0)
        die("setgroups");
    if (setresgid(slot_uid, slot_uid, slot_uid) < 0)
        die("setresgid");
    if (setresuid(slot_uid, slot_uid, slot_uid) < 0)   /* from root: effective and permitted emptied */
        die("setresuid");
    struct { uint32_t version; int pid; } header = {0x20080522, 0};   /* ... and the inheritable set too */
    uint32_t data[6] = {0};
    if (syscall(SYS_capset, &header, data) < 0)
        die("capset");
    if (chdir(dir) < 0)
        die("chdir");
    if (own_scratch)
        rebase_environment(dir);

    size_t source_size, extras_size = 0;
    char *source = frame(chan, &source_size);
    struct extras x = {0};
    if (extras) {
        char *body = frame(chan, &extras_size);
        unpack_extras(body, extras_size, &x);
    }
    close(chan);
    for (size_t i = 0; i < x.nfiles; i++)
        write_file(x.names[i], x.contents[i], x.sizes[i]);
    write_file(source_file, source, source_size);    /* after the files: the program's source wins */

    child_source = strdup(source_file);
    child_args = x.args ? x.args : calloc(1, sizeof(char *));
    child_nargs = x.nargs;
}

/* R, in a child: R goes on reading its console, from now on the program from its first line;
 * commandArgs() as `Rscript --vanilla <source> args...` gives it; a session directory of the slot uid. */
static void r_child(void) {
    int fd = open(child_source, O_RDONLY | O_NOFOLLOW);
    if (fd < 0 || dup2(fd, console_fd) < 0)
        die("open the source");
    if (fd != console_fd)
        close(fd);
    char **argv = calloc((size_t)server_argc + child_nargs + 2, sizeof(char *));
    int argc = 0;
    char *file_arg = malloc(strlen(child_source) + 8);
    sprintf(file_arg, "--file=%s", child_source);
    for (int i = 0; i < server_argc; i++)
        argv[argc++] = strncmp(server_argv[i], "--file=", 7) == 0 ? file_arg : (char *)server_argv[i];
    if (child_nargs) {
        argv[argc++] = "--args";
        for (size_t i = 0; i < child_nargs; i++)
            argv[argc++] = child_args[i];
    }
    R_set_command_line_arguments(argc, argv);
    R_TempDir = NULL;
    R_reInitTempDir(1);
}

static void spawn(char *message, int *fds, int nfds) {
    char *words[3 + MAX_LIMITS + 1];
    int nwords = 0;
    for (char *save = NULL, *w = strtok_r(message, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        if (nwords == 3 + MAX_LIMITS + 1)
            break;
        words[nwords++] = w;
    }
    long long limits[MAX_LIMITS][3];
    int nlimits = nwords - 3, ok = nfds == 4 && nwords >= 3 && nwords <= 3 + MAX_LIMITS &&
        strcmp(words[0], "F") == 0 && safe_name(words[2]) && !strchr(words[2], '/');
    for (int i = 0; ok && i < nlimits; i++) {
        char *p = words[3 + i], *end;
        for (int j = 0; ok && j < 3; j++) {
            errno = 0;
            limits[i][j] = strtoll(p, &end, 10);
            ok = errno == 0 && end != p && (j == 2 ? *end == 0 : *end == ':');
            p = end + 1;
        }
    }
    if (!ok || n_live == MAX_LIVE) {
        for (int i = 0; i < nfds; i++)
            close(fds[i]);
        reply("E bad spawn request");
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        child(fds, strcmp(words[1], "1") == 0, words[2], limits, nlimits);
        return;
    }
    int err = errno;
    for (int i = 0; i < nfds; i++)
        close(fds[i]);
    char text[256];
    if (pid < 0) {
        snprintf(text, sizeof text, "E fork: %s", strerror(err));
        reply(text);
        return;
    }
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pidfd < 0) {                  /* cannot happen for our unreaped child; never lose track of it */
        snprintf(text, sizeof text, "E pidfd_open: %s", strerror(errno));
        reply(text);
        _exit(1);
    }
    live_pid[n_live] = pid;
    live_fd[n_live++] = pidfd;
    snprintf(text, sizeof text, "P %d", (int)pid);
    reply(text);
}

static void reap(int i) {
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    pid_t got = wait4(live_pid[i], &status, WNOHANG, &ru);
    if (got == 0 || (got < 0 && errno == EINTR))
        return;
    char text[256];
    snprintf(text, sizeof text, "X %d %d %.6f %.6f %ld", (int)live_pid[i], status,
             ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6, ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6,
             ru.ru_maxrss);
    close(live_fd[i]);
    live_pid[i] = live_pid[n_live - 1];
    live_fd[i] = live_fd[--n_live];
    if (got > 0)
        reply(text);
}

/* Returns 1 in a child (confined, its program received), 0 if the server could not start. */
static int serve(void) {
    if (!scratch)
        return 0;
    reply("R");
    for (;;) {
        struct pollfd pfd[MAX_LIVE + 1];
        pfd[0] = (struct pollfd){ZYGOTE, POLLIN, 0};
        for (int i = 0; i < n_live; i++)
            pfd[i + 1] = (struct pollfd){live_fd[i], POLLIN, 0};
        if (poll(pfd, (nfds_t)n_live + 1, -1) < 0) {
            if (errno == EINTR)
                continue;
            _exit(1);
        }
        for (int i = n_live; i > 0; i--)      /* from the end: reap() moves the last entry into i - 1 */
            if (pfd[i].revents)
                reap(i - 1);
        if (!pfd[0].revents)
            continue;
        char message[4097];
        union { struct cmsghdr align; char buf[CMSG_SPACE(8 * sizeof(int))]; } control;
        struct iovec iov = {message, sizeof message - 1};
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                             .msg_controllen = sizeof control.buf};
        ssize_t got = recvmsg(ZYGOTE, &msg, MSG_CMSG_CLOEXEC);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            _exit(0);
        message[got] = 0;
        int fds[8], nfds = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                continue;
            int count = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            for (int i = 0; i < count; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                if (nfds < 8)
                    fds[nfds++] = fd;
                else
                    close(fd);
            }
        }
        if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {   /* truncated: refuse it */
            for (int i = 0; i < nfds; i++)
                close(fds[i]);
            reply("E bad spawn request");
            continue;
        }
        pid_t server = getpid();
        spawn(message, fds, nfds);
        if (getpid() != server)
            return 1;
    }
}

/* The interpreter's descriptors now (but 0-3 and the console, when there is one): a child keeps them. */
static int find_own_fds(void) {
    int too_many = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));) {
        int fd = atoi(e->d_name);
        struct stat st;
        if (e->d_name[0] == '.' || fd == dirfd(d) || fd <= ZYGOTE || fstat(fd, &st) < 0)
            continue;
        if (console_ino && st.st_dev == console_dev && st.st_ino == console_ino && console_fd < 0)
            console_fd = fd;
        else if (n_own < MAX_OWN - 1)
            own_ino[n_own] = st.st_ino, own_fds[n_own++] = fd;
        else
            too_many = 1;               /* a child would lose one of them: do not serve */
    }
    closedir(d);
    return !too_many;
}

/* R's entry (.C): commandArgs() and its length. Never returns in the server (unless it could not start);
 * returns in each child, confined, with the program as what R reads next. */
void sandbox_fork_server(char **args, int *nargs) {
    static const char *argv_copy[256];
    int i = 0;
    for (; i < *nargs && i < 255 && strcmp(args[i], "--args") != 0; i++) {
        argv_copy[i] = strdup(args[i]);
        if (strncmp(args[i], "--file=", 7) == 0) {
            struct stat st;
            if (stat(args[i] + 7, &st) == 0) {
                console_dev = st.st_dev;
                console_ino = st.st_ino;
            }
        }
    }
    server_argv = argv_copy;
    server_argc = i;
    if (i + 3 > *nargs || !R_set_command_line_arguments || !R_reInitTempDir || !&R_TempDir)
        return;
    slot_uid = (uid_t)strtoul(args[i + 1], NULL, 10);
    scratch = strdup(args[i + 2]);
    own_scratch = i + 7 < *nargs && strcmp(args[i + 7], "container") == 0;
    if (!find_own_fds() || console_fd < 0)
        return;
    own_fds[n_own++] = console_fd;
    if (R_TempDir)
        rmdir(R_TempDir);           /* ours, empty, in the scratch directory: each child makes its own */
    if (serve())
        r_child();
}

/* Racket's entry (ffi): the slot uid, the scratch directory and the slot mode. Never returns in the server
 * (NULL if it could not start); returns in each child, confined, its source file then its run arguments
 * (NULL-ended). */
char **sandbox_fork_serve(const char *uid, const char *scratch_dir, const char *mode) {
    slot_uid = (uid_t)strtoul(uid, NULL, 10);
    scratch = strdup(scratch_dir);
    own_scratch = mode && strcmp(mode, "container") == 0;
    if (!find_own_fds() || !serve())
        return NULL;
    char **out = calloc(child_nargs + 2, sizeof(char *));
    out[0] = child_source;
    for (size_t i = 0; i < child_nargs; i++)
        out[i + 1] = child_args[i];
    return out;
}

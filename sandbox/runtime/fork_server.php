<?php
// A slot's warm PHP interpreter (languages.toml: php's fork_server): one forked child per execution.
//
// The same server as fork_server.rb, for php-cli (pcntl for fork and wait4's rusage, FFI for the
// system calls PHP has no function for: recvmsg with SCM_RIGHTS, dup2, unshare, setgroups, capset).
// Started once per slot by the template zygote (runtime/fork_servers.py): root of the slot with only
// CAP_SETUID, CAP_SETGID and CAP_SYS_ADMIN, no_new_privs, the zygote's seccomp filters and the
// program filter, the zygote's end of a SOCK_SEQPACKET socket on fd 3. It never sees a request:
// "F <extras 0|1> <source file> <resource:soft:hard>..." + fds stdin, stdout, stderr, channel ->
// "P <pid>" (or "E <reason>"); "X <pid> <status> <utime> <stime> <maxrss>" when a child is reaped.
//
// The child confines itself before it reads its channel: oom_score_adj 1000, a new IPC namespace,
// its pipes on 0/1/2 and every other fd closed, the rlimits sent, setgroups([]), setresgid/setresuid
// to the slot uid, capset to nothing, cwd the scratch directory. Then it receives the program (and
// the request's files and run arguments), writes them and includes the source at global scope as
// `php -f main.php` would run it ($argv, $argc, exit statuses, shutdown functions, output buffers).
//
// argv: <uid> <scratch dir> <syscall number of wait4> <of unshare> <of pidfd_open> <of capset> <slot mode>
//
// Slot mode "container" (the docker backend: no namespaces, no CAP_SYS_ADMIN): the child does what a
// B does there -- no IPC namespace of its own (the container's; the sweep removes the uid's objects),
// and a scratch directory of its own, <scratch dir>/<pid> (0700, the slot uid's: we hold CAP_CHOWN),
// its cwd, HOME and TMPDIR.

namespace SandboxForkServer;

const CLONE_NEWIPC = 0x08000000;
const ZYGOTE = 3;

function libc(): \FFI
{
    static $ffi = null;
    return $ffi ??= \FFI::cdef('
        struct iovec { void *iov_base; size_t iov_len; };
        struct msghdr { void *msg_name; unsigned int msg_namelen; struct iovec *msg_iov; size_t msg_iovlen;
                        void *msg_control; size_t msg_controllen; int msg_flags; };
        long recvmsg(int fd, struct msghdr *msg, int flags);
        long send(int fd, const char *buf, size_t len, int flags);
        long read(int fd, void *buf, size_t count);
        int dup2(int oldfd, int newfd);
        int open(const char *path, int flags);
        int close(int fd);
        int unshare(int flags);
        int chown(const char *path, unsigned int owner, unsigned int group);
        int setgroups(size_t size, const void *list);
        int setresgid(unsigned int r, unsigned int e, unsigned int s);
        int setresuid(unsigned int r, unsigned int e, unsigned int s);
        int capset(void *header, void *data);
        long syscall(long number, long a, long b);
    ', 'libc.so.6');
}

function check(int $ret, string $what): void
{
    if ($ret < 0) {
        throw new \RuntimeException("$what failed");
    }
}

function reply(string $text): void
{
    libc()->send(ZYGOTE, $text, strlen($text), 0);
}

/** One packet from the zygote: [text, fds] ("" at EOF). */
function receive(): array
{
    $ffi = libc();
    $buf = $ffi->new('char[4096]');
    $control = $ffi->new('char[64]');
    $iov = $ffi->new('struct iovec');
    $iov->iov_base = \FFI::addr($buf[0]);
    $iov->iov_len = 4096;
    $msg = $ffi->new('struct msghdr');
    $msg->msg_iov = \FFI::addr($iov);
    $msg->msg_iovlen = 1;
    $msg->msg_control = \FFI::addr($control[0]);
    $msg->msg_controllen = 64;
    $n = $ffi->recvmsg(ZYGOTE, \FFI::addr($msg), 0x40000000);   // MSG_CMSG_CLOEXEC
    if ($n <= 0) {
        return ['', []];
    }
    $fds = [];
    $raw = \FFI::string($control, $msg->msg_controllen);
    for ($pos = 0; $pos + 16 <= strlen($raw);) {       // struct cmsghdr { size_t len; int level; int type; }
        ['len' => $len, 'level' => $level, 'type' => $type] = unpack('Qlen/llevel/ltype', $raw, $pos);
        if ($len < 16) {
            break;
        }
        if ($level === 1 && $type === 1) {               // SOL_SOCKET, SCM_RIGHTS
            $fds = array_merge($fds, array_values(unpack('l*', substr($raw, $pos + 16, $len - 16))));
        }
        $pos += ($len + 7) & ~7;
    }
    return [\FFI::string($buf, $n), $fds];
}

function read_exact(int $fd, int $count): string
{
    $ffi = libc();
    $data = '';
    $buf = $ffi->new('char[65536]');
    while (strlen($data) < $count) {
        $n = $ffi->read($fd, \FFI::addr($buf[0]), min(65536, $count - strlen($data)));
        if ($n <= 0) {
            exit(123);
        }
        $data .= \FFI::string($buf, $n);
    }
    return $data;
}

function frame(int $fd): string
{
    return read_exact($fd, unpack('N', read_exact($fd, 4))[1]);
}

/** The request's files and run arguments (runtime/scratch_files.py's pack_extras). */
function unpack_extras(string $body): array
{
    $pos = 0;
    $take = function (int $n) use ($body, &$pos): string {
        if ($pos + $n > strlen($body)) {
            exit(123);
        }
        $chunk = substr($body, $pos, $n);
        $pos += $n;
        return $chunk;
    };
    $files = [];
    for ($i = unpack('N', $take(4))[1]; $i > 0; $i--) {
        $name = $take(unpack('N', $take(4))[1]);
        $files[] = [$name, $take(unpack('J', $take(8))[1])];
    }
    $args = [];
    for ($i = unpack('N', $take(4))[1]; $i > 0; $i--) {
        $args[] = $take(unpack('N', $take(4))[1]);
    }
    return [$files, $args];
}

function safe_name(string $name): bool
{
    if ($name === '' || $name[0] === '/') {
        return false;
    }
    foreach (explode('/', $name) as $part) {
        if ($part === '' || $part === '.' || $part === '..') {
            return false;
        }
    }
    return true;
}

function write_files(array $files): void
{
    foreach ($files as [$name, $content]) {
        if (!safe_name($name)) {
            fwrite(STDERR, "sandbox: unsafe file name\n");
            exit(126);
        }
        $dir = dirname($name);
        if ($dir !== '.' && !is_dir($dir)) {
            @mkdir($dir, 0755, true);
        }
        if (is_link($name) || file_exists($name)) {
            @unlink($name);
        }
        $f = @fopen($name, 'x');                         // O_CREAT|O_EXCL: never through a link
        if ($f === false || fwrite($f, $content) !== strlen($content)) {
            fwrite(STDERR, "sandbox: cannot write the request's files\n");
            exit(126);
        }
        fclose($f);
    }
}

/** In the child: confine, receive; returns [source path, argv]. */
function confine_and_receive(array $cfg, array $fds, bool $extras, string $source, array $limits): array
{
    $ffi = libc();
    file_put_contents('/proc/self/oom_score_adj', '1000');
    $scratch = $cfg['scratch'];
    if ($cfg['own_scratch']) {
        $scratch .= '/' . getmypid();
        if (!mkdir($scratch, 0700)) {
            throw new \RuntimeException('mkdir failed');
        }
        check($ffi->chown($scratch, $cfg['uid'], $cfg['uid']), 'chown');
    } else {
        check($ffi->unshare(CLONE_NEWIPC), 'unshare');
    }
    [$in, $out, $err, $chan] = $fds;
    check($ffi->dup2($in, 0), 'dup2');
    check($ffi->dup2($out, 1), 'dup2');
    check($ffi->dup2($err, 2), 'dup2');
    $null = $ffi->open('/dev/null', 0);
    check($null, 'open');
    foreach (scandir('/proc/self/fd') as $fd) {   // php's own (this script): /dev/null in its place, so php's
        if (ctype_digit($fd) && (int)$fd > 2 && (int)$fd !== $chan && (int)$fd !== $null) {   // later close is harmless
            in_array((int)$fd, $cfg['own'], true) ? $ffi->dup2($null, (int)$fd) : $ffi->close((int)$fd);
        }
    }
    $ffi->close($null);
    foreach ($limits as [$which, $soft, $hard]) {
        if (!posix_setrlimit($which, $soft, $hard)) {
            throw new \RuntimeException('setrlimit failed');
        }
    }
    $uid = $cfg['uid'];
    check($ffi->setgroups(0, null), 'setgroups');
    check($ffi->setresgid($uid, $uid, $uid), 'setresgid');
    check($ffi->setresuid($uid, $uid, $uid), 'setresuid');
    $header = $ffi->new('uint32_t[2]');
    $header[0] = 0x20080522;
    $data = $ffi->new('uint32_t[6]');
    check($ffi->capset(\FFI::addr($header[0]), \FFI::addr($data[0])), 'capset');
    if (!chdir($scratch)) {
        throw new \RuntimeException('chdir failed');
    }
    if ($cfg['own_scratch']) {                     // as `php -f` started there would see its environment
        foreach (['HOME', 'TMPDIR'] as $name) {
            putenv("$name=$scratch");
            $_SERVER[$name] = $scratch;
            if (isset($_ENV[$name])) {
                $_ENV[$name] = $scratch;
            }
        }
    }
    $code = frame($chan);
    [$files, $args] = $extras ? unpack_extras(frame($chan)) : [[], []];
    $ffi->close($chan);
    write_files($files);
    write_files([[$source, $code]]);
    return [$scratch . '/' . $source, [$source, ...$args]];
}

function spawn(array $cfg, string $message, array $fds, array &$live): void
{
    $words = explode(' ', $message);
    $source = $words[2] ?? '';
    $limits = [];
    foreach (array_slice($words, 3) as $item) {
        $limits[] = array_map('intval', explode(':', $item));
    }
    if (count($fds) !== 4 || !safe_name($source) || str_contains($source, '/')) {
        foreach ($fds as $fd) {
            libc()->close($fd);
        }
        reply('E bad spawn request');
        return;
    }
    $pid = pcntl_fork();
    if ($pid === 0) {
        try {
            $GLOBALS['__sandbox_program'] = confine_and_receive($cfg, $fds, ($words[1] ?? '0') === '1', $source, $limits);
            return;
        } catch (\Throwable $e) {
            fwrite(STDERR, 'sandbox: ' . $e->getMessage() . "\n");
            exit(122);
        }
    }
    foreach ($fds as $fd) {
        libc()->close($fd);
    }
    if ($pid < 0) {
        reply('E fork failed');
        return;
    }
    $pidfd = libc()->syscall($cfg['sys_pidfd_open'], $pid, 0);
    $live[$pid] = fopen("php://fd/$pidfd", 'r');         // a dup: ours is closed at once
    libc()->close($pidfd);
    reply("P $pid");
}

function reap(int $pid, array &$live): void
{
    $status = 0;
    $usage = [];
    if (pcntl_waitpid($pid, $status, WNOHANG, $usage) !== $pid) {
        return;
    }
    fclose($live[$pid]);
    unset($live[$pid]);
    reply(sprintf('X %d %d %.6f %.6f %d', $pid, $status,
        $usage['ru_utime.tv_sec'] + $usage['ru_utime.tv_usec'] / 1e6,
        $usage['ru_stime.tv_sec'] + $usage['ru_stime.tv_usec'] / 1e6, $usage['ru_maxrss']));
}

/** The server's loop; returns only in a child, which then runs the program at global scope. */
function serve(array $cfg): void
{
    $live = [];
    $zygote = fopen('php://fd/' . ZYGOTE, 'r');          // for select only: packets are read with recvmsg
    while (true) {
        $read = [$zygote, ...array_values($live)];
        $write = $except = null;
        if (@stream_select($read, $write, $except, null) === false) {
            continue;
        }
        foreach ($read as $stream) {
            if ($stream === $zygote) {
                [$message, $fds] = receive();
                if ($message === '') {
                    exit(0);
                }
                spawn($cfg, $message, $fds, $live);
                if (isset($GLOBALS['__sandbox_program'])) {   // the child: its loop ends here
                    fclose($zygote);
                    foreach ($live as $other) {
                        fclose($other);
                    }
                    return;
                }
            } else {
                $pid = array_search($stream, $live, true);
                if ($pid !== false) {
                    reap($pid, $live);
                }
            }
        }
    }
}

function program(): string
{
    [$path, $argv] = $GLOBALS['__sandbox_program'];
    unset($GLOBALS['__sandbox_program'], $GLOBALS['__sandbox_cfg']);
    $GLOBALS['argv'] = $_SERVER['argv'] = $argv;
    $GLOBALS['argc'] = $_SERVER['argc'] = count($argv);
    $_SERVER['SCRIPT_NAME'] = $_SERVER['SCRIPT_FILENAME'] = $_SERVER['PHP_SELF'] = $_SERVER['PATH_TRANSLATED'] = $argv[0];
    chdir(dirname($path));
    return $path;
}

[$__sandbox_uid, $__sandbox_scratch, , , $__sandbox_pidfd_open, , $__sandbox_mode] = array_slice($argv, 1);
$__sandbox_cfg = ['uid' => (int)$__sandbox_uid, 'scratch' => $__sandbox_scratch,
                  'sys_pidfd_open' => (int)$__sandbox_pidfd_open, 'own_scratch' => $__sandbox_mode === 'container',
                  'own' => array_values(array_diff(array_map('intval', array_filter(scandir('/proc/self/fd'), 'ctype_digit')),
                                                   [0, 1, 2, ZYGOTE]))];
unset($__sandbox_uid, $__sandbox_scratch, $__sandbox_pidfd_open, $__sandbox_mode);
reply('R');
serve($__sandbox_cfg);
include program();

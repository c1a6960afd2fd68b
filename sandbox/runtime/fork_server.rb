# frozen_string_literal: true

# A slot's warm Ruby interpreter (languages.toml: ruby's fork_server): one forked child per execution.
#
# Started once per slot by the template zygote (runtime/fork_servers.py), which exec'd us as root of
# the slot with no_new_privs, an empty bounding set, the zygote's seccomp filters and the program
# filter (no SIGKILL can be sent), a scrubbed environment, and the zygote's end of a SOCK_SEQPACKET
# socket on fd 3. Like the zygote, we never see a byte of any request: only "fork one child with
# these fds" ("F <extras 0|1> <source file> <resource:soft:hard>..." + fds stdin, stdout, stderr, channel), answered
# "P <pid>" (or "E <reason>"), and, unprompted when a child is reaped, "X <pid> <status> <utime>
# <stime> <maxrss>" from wait4, which the zygote relays to the supervisor A like its own children's.
#
# The child confines itself before the program exists (what runtime/untrusted.py's confine does for
# B): oom_score_adj 1000, a new IPC namespace, our fds closed but its own pipes on 0/1/2 (+ the
# channel), the rlimits the zygote sent (clamped there, as for a B), setgroups([]), setresgid/setresuid
# to the slot's uid (every capability gone), cwd the scratch directory. It is born in the programs'
# cgroups. Only then does it read the source (and the request's files
# and run arguments) from its channel, as B does, and run it the way `ruby main.rb` would: `$0` and
# `__FILE__` are the source file, ARGV the run arguments, at_exit hooks run, an uncaught exception
# is printed and exits 1. Whatever the program does to its interpreter stays in its own process.
#
# argv: <uid> <scratch dir> <syscall number of wait4> <of unshare> <of pidfd_open> <of capset> <slot mode>
#
# Slot mode "container" (the docker backend: no namespaces, no CAP_SYS_ADMIN): the child does what a B
# does there -- no IPC namespace of its own (the container's; the sweep removes the uid's objects), and
# a scratch directory of its own, <scratch dir>/<pid> (0700, the slot uid's: we hold CAP_CHOWN), its
# cwd, HOME and TMPDIR.

require "fiddle"
require "fileutils"
require "socket"

# Everything of ours lives in this module, which the child removes before the program loads: the
# program's top level sees Ruby's own methods (spawn, exit, ...), not ours.
module SandboxForkServer
  module_function

  UID, SCRATCH, SYS_WAIT4, SYS_UNSHARE, SYS_PIDFD_OPEN, SYS_CAPSET, MODE = ARGV.shift(7).map { |a| a =~ /\A\d+\z/ ? Integer(a) : a }
  OWN_SCRATCH = MODE == "container"
  ZYGOTE = Socket.for_fd(3)
  CLONE_NEWIPC = 0x08000000
  WNOHANG = 1
  #: Descriptors the interpreter itself holds (its own pipes): a child keeps those, closes every other one.
  OWN_FDS = Dir.children("/proc/self/fd").map(&:to_i) - [0, 1, 2, 3]
  SELF_FILE = File.expand_path(__FILE__)

  def read_exact(io, count)
    data = +""
    while data.bytesize < count
      chunk = io.read(count - data.bytesize)
      exit!(123) if chunk.nil? || chunk.empty?
      data << chunk
    end
    data
  end

  def frame(io)
    read_exact(io, read_exact(io, 4).unpack1("N")).b
  end

  # The request's files and run arguments (runtime/scratch_files.py's pack_extras).
  def unpack_extras(body)
    pos = 0
    take = lambda do |n|
      exit!(123) if pos + n > body.bytesize
      chunk = body.byteslice(pos, n)
      pos += n
      chunk
    end
    files = Array.new(take.call(4).unpack1("N")) do
      name = take.call(take.call(4).unpack1("N")).force_encoding(Encoding::UTF_8)
      [name, take.call(take.call(8).unpack1("Q>"))]
    end
    args = Array.new(take.call(4).unpack1("N")) { take.call(take.call(4).unpack1("N")).force_encoding(Encoding::UTF_8) }
    [files, args]
  end

  def safe_name?(name)
    !name.empty? && !name.start_with?("/") && name.split("/", -1).none? { |part| ["", ".", ".."].include?(part) }
  end

  def write_files(files)
    files.each do |name, content|
      unless safe_name?(name)
        $stderr.write("sandbox: unsafe file name #{name[0, 100].inspect}\n")
        exit!(126)
      end
      dir = File.dirname(name)
      FileUtils.mkdir_p(dir, mode: 0o755) if dir != "."
      File.unlink(name) if File.symlink?(name) || File.exist?(name)
      File.open(name, File::WRONLY | File::CREAT | File::EXCL | File::NOFOLLOW, 0o644) { |f| f.write(content) }
    end
  rescue SystemCallError => e
    $stderr.write("sandbox: cannot write the request's files: #{e.message}\n")
    exit!(126)
  end

  # In the child, before the program exists: confine, then receive and run it. Never returns.
  def child(ios, extras, source_file, limits, live)
    source_file, args = confine_and_receive(ios, extras, source_file, limits, live)
    Object.send(:remove_const, :SandboxForkServer)
    ARGV.replace(args)
    $0 = source_file
    begin
      load(source_file)
    rescue Exception => e # rubocop:disable Lint/RescueException -- only to hide our frames; re-raised as is
      e.set_backtrace(e.backtrace.reject { |line| line.start_with?(SELF_FILE) }) if e.backtrace
      raise
    end
  end

  def confine_and_receive(ios, extras, source_file, limits, live)
    File.write("/proc/self/oom_score_adj", "1000")          # the OOM killer takes the program, never the server
    scratch = SCRATCH
    if OWN_SCRATCH
      scratch = "#{SCRATCH}/#{Process.pid}"
      Dir.mkdir(scratch, 0o700)
      File.chown(UID, UID, scratch)
    else
      syscall(SYS_UNSHARE, CLONE_NEWIPC)
    end
    $stdin.reopen(ios[0])
    $stdout.reopen(ios[1])
    $stderr.reopen(ios[2])
    chan = ios[3]
    [ZYGOTE, *live.values, *ios[0, 3]].each(&:close)       # through their objects: no finalizer closes a reused fd
    live.clear
    (Dir.children("/proc/self/fd").map(&:to_i) - [0, 1, 2, chan.fileno, *OWN_FDS]).each do |fd|
      IO.for_fd(fd, autoclose: true).close
    rescue StandardError
      nil
    end
    limits.each { |which, soft, hard| Process.setrlimit(which, soft, hard) }
    Process.groups = []
    uid = UID
    Process::Sys.setresgid(uid, uid, uid)
    Process::Sys.setresuid(uid, uid, uid)                  # from root: effective and permitted emptied
    header = [0x20080522, 0].pack("Ll")                    # ... and the inheritable set too
    data = ([0] * 6).pack("L6")
    syscall(SYS_CAPSET, Fiddle::Pointer[header].to_i, Fiddle::Pointer[data].to_i)
    Dir.chdir(scratch)
    ENV["HOME"] = ENV["TMPDIR"] = scratch if OWN_SCRATCH
    source = frame(chan)
    files, args = extras ? unpack_extras(frame(chan)) : [[], []]
    chan.close
    write_files(files)
    write_files([[source_file, source]])                   # after the files: the program's source wins
    data_section(source_file, source)
    [source_file, args]
  rescue StandardError => e
    $stderr.write("sandbox: #{e.class}: #{e.message}\n") rescue nil
    exit!(122)
  end

  # `ruby main.rb` opens DATA on what follows __END__ in the main script; `load` does not.
  def data_section(source_file, source)
    marker = source.match(/^__END__\r?(?:\n|\z)/n)
    return unless marker

    file = File.open(source_file, "r")
    file.seek(marker.end(0))
    Object.const_set(:DATA, file)
  end

  def reply(text)
    ZYGOTE.sendmsg(text)
  end

  def spawn(message, ios, live)
    _, extras, source_file, *limits = message.split(" ")
    limits = limits.map { |item| item.split(":").map { |n| Integer(n) } }
    unless ios.size == 4 && source_file && safe_name?(source_file) && !source_file.include?("/") &&
           limits.all? { |item| item.size == 3 }
      ios.each(&:close)
      return reply("E bad spawn request")
    end
    pid = Process.fork { child(ios, extras == "1", source_file, limits, live) }
    ios.each(&:close)
    live[pid] = IO.for_fd(syscall(SYS_PIDFD_OPEN, pid, 0), autoclose: true)
    reply("P #{pid}")
  rescue SystemCallError => e
    reply("E fork: #{e.message}")
  end

  def reap(pid, live)
    status = "\0" * 4
    usage = "\0" * 144
    got = syscall(SYS_WAIT4, pid, Fiddle::Pointer[status].to_i, WNOHANG, Fiddle::Pointer[usage].to_i)
    return if got.zero?

    live.delete(pid)&.close
    utime_s, utime_us, stime_s, stime_us, maxrss = usage.unpack("q5")
    reply(format("X %d %d %.6f %.6f %d", pid, status.unpack1("l"), utime_s + (utime_us / 1e6),
                 stime_s + (stime_us / 1e6), maxrss))
  end

  def serve
    live = {}
    loop do
      ready, = IO.select([ZYGOTE, *live.values])
      ready.each do |io|
        if io.equal?(ZYGOTE)
          message, _addr, _flags, *controls = ZYGOTE.recvmsg(4096, 0, nil, scm_rights: true)
          exit!(0) if message.nil? || message.empty?
          ios = controls.select { |c| c.cmsg_is?(:SOCKET, :RIGHTS) }.flat_map(&:unix_rights)
          spawn(message, ios, live)
        else
          pid = live.key(io)
          reap(pid, live) if pid
        end
      end
    end
  end

end

SandboxForkServer.reply("R")
SandboxForkServer.serve

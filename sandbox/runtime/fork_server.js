'use strict';
// A slot's warm node (languages.toml: nodejs's fork_server): one forked child per execution.
// Started as `node --single-threaded -r fork_server.js main.js <uid> <scratch dir> <syscall numbers> <slot mode>`:
// node requires this preload first, then runs main.js. The C helpers do the work: fork_server_node.so (a
// Node-API addon) prepares node for fork and calls fork_server_native.so's serve loop, which never returns in
// the server, so the server never gets to main.js; in each child it returns confined, in the scratch directory
// where the program's main.js now is, with its run arguments, node's event loop and random generator its own.
// This preload then puts process.argv, process.execArgv and process.pid as `node main.js args...` has them and
// returns, and node's own start-up goes on: main.js runs as the main module exactly as under `node main.js`
// (require.main, uncaught errors reported with status 1, process.exitCode, beforeExit/exit, unhandled
// rejections, stdio flushed at exit). It never touches process.stdout/stderr/stdin or console: node makes them
// lazily, so a child makes its own on its own descriptors.
// What a child's first console.log needs (stdout on a pipe is a net.Socket, on a terminal a tty.WriteStream):
// loaded once here (~7 ms of CPU per execution otherwise), as node's snapshot holds the rest of its library.
require('net');
require('tty');
// ...and the functions that write it, compiled here (V8 compiles a function when it first runs: ~1 ms per
// execution otherwise): a console.log to a stream of ours and a net.Socket without a handle, which leave no trace
// (no descriptor, no handle, no async id, no tick, no module loaded: the log's callback is called after write()
// returns, so the stream calls its own without process.nextTick; colorMode false, or the console would load
// internal/util/colors, which makes process.stderr).
{
  let written;
  const sink = new (require('stream').Writable)({ write(chunk, encoding, callback) { written = callback; } });
  new console.Console({ stdout: sink, colorMode: false }).log('%s', 'x', 1, -1.5, [1, 'a'], { a: null });
  written();
  new (require('net').Socket)({ readable: false, writable: true });
}
// A worker thread inherits its parent's options unless given execArgv: the server's --require of this file,
// which a child cannot read (the runtime is root's). `node main.js` has none: a worker gets the child's
// (cleared) process.execArgv instead, as child_process.fork does.
const threads = require('worker_threads');
threads.Worker = class Worker extends threads.Worker {
  constructor(filename, options = {}) {
    super(filename, options && options.execArgv === undefined ? { ...options, execArgv: process.execArgv } : options);
  }
};

// The preparation of node for fork (fork_server_node.c) reaches into node's internals, checked on node 20 only:
// under any other node (the docker images' Debian node 18 hangs at exit) the server steps aside at once and the
// zygote runs `node main.js` for every execution.
if (process.versions.node.split('.')[0] !== '20') process.exit(1);

const addon = {
  exports: {
    uid: process.argv[2], scratch: process.argv[3], mode: process.argv[8],
    native: `${__dirname}/fork_server_native.so`,
  },
};
process.dlopen(addon, `${__dirname}/fork_server_node.so`);
const got = addon.exports;
if (typeof got.source !== 'string') process.exit(1);   // the server could not start: the zygote sees it end

const main = `${got.cwd}/${got.source}`;
if (main !== process.argv[1]) {
  // A scratch directory of the child's own (slot mode "container"): node resolved main.js, and cached its
  // working directory, in the server's. `Module.runMain` is the hook node keeps for preloads.
  process.chdir(got.cwd);
  const Module = require('module');
  const runMain = Module.runMain;
  Module.runMain = function () {
    Module.runMain = runMain;
    return runMain.call(this, main);
  };
}
process.argv.splice(1, process.argv.length, main, ...got.args);
process.execArgv.splice(0, process.execArgv.length);   // `node main.js` has none (child_process.fork uses them)
Object.defineProperty(process, 'pid', { value: got.pid, writable: false, enumerable: true, configurable: true });
delete require.cache[__filename];

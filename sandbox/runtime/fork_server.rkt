#lang racket/base
;; A slot's warm racket (languages.toml: racket's fork_server): one forked child per execution.
;; Started as `racket -t fork_server.rkt -u main.rkt <uid> <scratch dir> <syscall numbers> <slot mode>`: racket
;; requires this module first, then (`-u`) main.rkt. fork_server_native.c does the work (the system
;; calls, through the ffi): sandbox_fork_serve never returns in the server, so the server never gets to
;; main.rkt; in each child it returns confined (with fresh copies of racket's own epoll instance and
;; wake-up pipe), in the scratch directory where the program's main.rkt now is, with its run arguments.
;; This module's body then ends, and racket's own start-up goes on with `-u main.rkt` exactly as
;; `racket main.rkt args...` does (configure-runtime, the module, its main submodule, an uncaught error
;; reported with status 1, output flushed at exit).
(require ffi/unsafe syntax/modread)
;; `#lang racket` (most programs' language) costs ~300 ms to instantiate and ~450 ms more to expand a
;; first module with (its compile-time half): both done once here, in the server, on a module declared
;; under a name of its own and never instantiated.
(dynamic-require 'racket #f)
(parameterize ([current-module-declare-name (make-resolved-module-path 'sandbox-fork-server-warm-up)])
  (eval (check-module-form (with-module-reading-parameterization
                             (lambda () (read-syntax 'warm-up (open-input-string "#lang racket\n(void)\n"))))
                           'ignored #f)))
(let* ([argv (current-command-line-arguments)]
       [here (let-values ([(dir name must-be-dir?) (split-path (variable-reference->module-source
                                                                (#%variable-reference)))])
               dir)]
       [serve (get-ffi-obj "sandbox_fork_serve" (ffi-lib (build-path here "fork_server_native.so"))
                           (_fun _string _string _string -> _pointer))]
       [got (serve (vector-ref argv 0) (vector-ref argv 1) (vector-ref argv 6))])
  (unless got (exit 1))
  ;; racket read its working directory once, at start: the child's (container mode: a directory of its own)
  (let ([cwd (let ([buf (make-bytes 4096 0)])
               ((get-ffi-obj "getcwd" #f (_fun _bytes _size -> _pointer)) buf 4096)
               (bytes->path (car (regexp-match #rx#"^[^\0]*" buf))))])
    (current-directory cwd)
    (current-directory-for-user cwd))
  (current-command-line-arguments
   (list->vector (let loop ([i 1] [acc '()])       ; [0] is the source file: main.rkt, as -u says
                   (define s (ptr-ref got _string/utf-8 i))
                   (if s (loop (add1 i) (cons s acc)) (reverse acc))))))

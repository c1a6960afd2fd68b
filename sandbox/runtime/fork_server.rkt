#lang racket/base
;; A slot's warm racket (languages.toml: racket's fork_server): one forked child per execution.
;; Started as `racket -t fork_server.rkt -u main.rkt <uid> <scratch dir> <syscall numbers> <slot mode>`: racket
;; requires this module first, then (`-u`) main.rkt. fork_server_native.c does the work (the system
;; calls, through the ffi): sandbox_fork_serve never returns in the server, so the server never gets to
;; main.rkt; in each child it returns confined (with fresh copies of racket's own epoll instance and
;; wake-up pipe), in the scratch directory where the program's main.rkt now is, with its run arguments.
;; This module's body then ends, and racket's own start-up goes on with `-u main.rkt` exactly as
;; `racket main.rkt args...` does (the module, its main submodule, an uncaught error reported with status
;; 1, output flushed at exit), main.rkt's configure-runtime step included (`configuring-load` below).
(require ffi/unsafe syntax/modread)
;; Where the loaded heap will lie (3. below): racket's collector (Chez Scheme) maps its memory in chunks of
;; 2 MB + 16 KB, on x86_64 each in the lowest gap of the low 2 GB that fits (MAP_32BIT), so most start off a
;; 2 MB boundary and hold no whole huge page. While racket loads, every gap of that window is covered
;; (PROT_NONE, no memory) but for a hole of 2 MB + 16 KB at each 4 MB boundary: a chunk then starts on a
;; 2 MB boundary, its first 2 MB one huge page. A chunk that fits no hole is mapped elsewhere, as when
;; the window is full (Chez Scheme's own fallback). The cover goes before serving: a child maps as racket does.
(define heap-window-cover '())                     ; (start . end) of each covered range
(when (and (eq? (system-type 'arch) 'x86_64) (eq? (system-type 'os*) 'linux))
  (with-handlers ([exn:fail? void])              ; no /proc/self/maps: nothing (more) covered
    (define mmap (get-ffi-obj "mmap" #f (_fun _intptr _size _int _int _int _intptr -> _intptr)))
    (define stride (* 4 1024 1024))
    (define hole (+ (* 2 1024 1024) (* 16 1024)))
    (define used
      (sort (for/list ([line (call-with-input-file "/proc/self/maps" (lambda (in) (for/list ([l (in-lines in)]) l)))])
              (define m (regexp-match #px"^([0-9a-f]+)-([0-9a-f]+) " line))
              (cons (string->number (cadr m) 16) (string->number (caddr m) 16)))
            < #:key car))
    (define (cover! start end)   ; PROT_NONE, MAP_PRIVATE|ANONYMOUS|NORESERVE|FIXED_NOREPLACE
      (when (and (< start end) (= start (mmap start (- end start) 0 #x104022 -1 0)))
        (set! heap-window-cover (cons (cons start end) heap-window-cover))))
    (let gaps ([pos #x40000000] [used used])
      (define end (if (null? used) #x80000000 (min #x80000000 (max pos (caar used)))))
      (let holes ([a pos])                 ; cover [pos, end) but the holes
        (when (< a end)
          (let ([boundary (* stride (quotient (+ a stride -1) stride))])
            (cover! a (min end boundary))
            (holes (+ boundary hole)))))
      (unless (or (null? used) (>= end #x80000000))
        (gaps (max pos (cdar used)) (cdr used))))))
(define (uncover-heap-window)
  (define munmap (get-ffi-obj "munmap" #f (_fun _intptr _size -> _int)))
  (for ([range heap-window-cover])
    (munmap (car range) (- (cdr range) (car range)))))
;; `#lang racket` (most programs' language) costs ~300 ms to instantiate and ~450 ms more to expand a
;; first module with (its compile-time half): both done once here, in the server, on a module declared
;; under a name of its own and never instantiated.
(dynamic-require 'racket #f)
(parameterize ([current-module-declare-name (make-resolved-module-path 'sandbox-fork-server-warm-up)])
  (eval (check-module-form (with-module-reading-parameterization
                             (lambda () (read-syntax 'warm-up (open-input-string "#lang racket\n(void)\n"))))
                           'ignored #f)))
;; What a child pays for the server's heap (~120 MB, 80 MB of it live), measured per hello in docs/sandbox.md:
;; 1. The warm-up's young objects: a child's first minor collection would copy all of them (~5 ms and
;;    ~1,500 copy-on-write faults per execution): a major collection here leaves none. (Not Chez Scheme's
;;    static generation, which would spare a child's major collections the server's 80 MB too: code moved
;;    there loses the procedure names that an error's "context...:" lines print.)
;; 2. Page tables: the heap collapsed into 2 MB pages (MADV_COLLAPSE, as runtime/fork_server_r.c does R's),
;;    so that a fork copies, and a child's exit unmaps, one page-middle entry instead of 512 page-table
;;    entries for each (~60 MB of the heap); a child's write still copies 4 KB only. Where the kernel cannot (before Linux 6.1, no huge
;;    pages), nothing happens.
;; 3. ...and more of the heap can be: the chunks loaded in the covered window (`heap-window-cover` above) start
;;    on 2 MB boundaries (~50 -> ~85-95 MB of it in huge pages; the server's fork ~1.6 -> ~1.0 ms of CPU and a
;;    child ~1 ms less, mostly its exit's unmapping). The final collection still maps into the window's holes.
(define (settle-heap)
  (collect-garbage)
  (uncover-heap-window)
  (with-handlers ([exn:fail? void])               ; no /proc/self/maps: the heap stays in 4 KB pages
    (define madvise (get-ffi-obj "madvise" #f (_fun _intptr _size _int -> _int)))
    (define huge (* 2 1024 1024))
    (for ([line (call-with-input-file "/proc/self/maps" (lambda (in) (for/list ([l (in-lines in)]) l)))])
      ;; private, writable, anonymous (no file, or the brk heap)
      (define m (regexp-match #px"^([0-9a-f]+)-([0-9a-f]+) rw.p 0+ 00:00 0\\s*(\\[heap\\])?$" line))
      (when m
        (define start (* huge (quotient (+ (string->number (cadr m) 16) huge -1) huge)))
        (define end (* huge (quotient (string->number (caddr m) 16) huge)))
        (when (> end start)
          (madvise start (- end start) 25))))))  ; MADV_COLLAPSE
;; `racket main.rkt` configures the run time for main.rkt (racket's cs/main.sps): it declares main.rkt
;; (reads, expands, compiles it), instantiates its `configure-runtime` submodule, else what its language's
;; info names, then requires it. racket does that for the first module of its command line only, in the
;; server this one; so a child's load handler does it when racket's `-u main.rkt` loads main.rkt, right
;; after declaring it, then steps aside. An error while declaring must print racket's own context, with no
;; frame of this module's in it: the handler is evaluated from a datum (no name, no source location) and
;; runs under racket's require of main.rkt, not under this module's body. (Compiled here, in the server.)
(define configuring-load
  (parameterize ([current-namespace (make-base-namespace)])
    (eval '(lambda (main)
              (let ([load (current-load/use-compiled)])
                (lambda (path name)
                  (if (and (equal? path main) (symbol? name))   ; main.rkt itself, not a submodule of a file
                      (begin
                        (current-load/use-compiled load)           ; once: steps aside
                        (load path name)
                        (let* ([m (module-path-index-join `(file ,(path->string main)) #f)]
                               [config-m (module-path-index-join '(submod "." configure-runtime) m)])
                          (if (module-declared? config-m #t) (dynamic-require config-m #f) (void))
                          (let ([info (module->language-info m #t)])
                            (if (and (vector? info) (= 3 (vector-length info)))
                                (let ([infos (((dynamic-require (vector-ref info 0) (vector-ref info 1))
                                               (vector-ref info 2))
                                              'configure-runtime '())])
                                  (if (and (list? infos)
                                           (andmap (lambda (i) (and (vector? i) (= 3 (vector-length i)))) infos))
                                      (for-each (lambda (i) ((dynamic-require (vector-ref i 0) (vector-ref i 1))
                                                             (vector-ref i 2)))
                                                infos)
                                      (raise-argument-error 'runtime-configure "(listof (vector any any any))"
                                                            infos)))
                                (void)))))
                      (load path name))))))))
(let* ([argv (current-command-line-arguments)]
       [here (let-values ([(dir name must-be-dir?) (split-path (variable-reference->module-source
                                                                (#%variable-reference)))])
               dir)]
       [serve (get-ffi-obj "sandbox_fork_serve" (ffi-lib (build-path here "fork_server_native.so"))
                           (_fun _string _string _string -> _pointer))]
       ;; looked up here, not in the child: a `_fun` type makes racket compile a foreign-call stub (~0.8 ms of
       ;; CPU and ~100 copy-on-write faults that every child would pay again)
       [getcwd (get-ffi-obj "getcwd" #f (_fun _bytes _size -> _pointer))]
       [got (begin (settle-heap) (serve (vector-ref argv 0) (vector-ref argv 1) (vector-ref argv 6)))])
  (unless got (exit 1))
  ;; racket read its working directory once, at start: the child's (container mode: a directory of its own)
  (let ([cwd (let ([buf (make-bytes 4096 0)])
               (getcwd buf 4096)
               (bytes->path (car (regexp-match #rx#"^[^\0]*" buf))))])
    (current-directory cwd)
    (current-directory-for-user cwd))
  ;; and its collection paths and links once, at start, from HOME: the child's HOME (container mode: that
  ;; directory) names its user collections, as `racket main.rkt` started there finds them
  (current-library-collection-links (find-library-collection-links))
  (current-library-collection-paths (find-library-collection-paths))
  (current-command-line-arguments
   (list->vector (let loop ([i 1] [acc '()])       ; [0] is the source file: main.rkt, as -u says
                   (define s (ptr-ref got _string/utf-8 i))
                   (if s (loop (add1 i) (cons s acc)) (reverse acc)))))
  (current-load/use-compiled (configuring-load (simplify-path (path->complete-path "main.rkt")))))

# A slot's warm R (languages.toml: R's fork_server): one forked child per execution.
# fork_server_native.c does the work (R has no interface to the system calls): the call below never
# returns in the server; in each child it returns confined, with the program as what R reads next.
# fork_server_r.c prepares the server first: R's exit without `sh -c "rm -Rf ..."` (the library stays
# mapped once unloaded here), the heap as huge pages.
# This must stay the script's last top-level expression: R reads its script line by line, and a child
# goes on reading, from the same descriptor, its program.
invisible(local({
    dir <- dirname(sub("^--file=", "", grep("^--file=", commandArgs(), value = TRUE)[1]))
    prepare <- file.path(dir, "fork_server_r.so")
    if (file.exists(prepare)) {
        dyn.load(prepare)
        .C("sandbox_r_prepare")
        dyn.unload(prepare)
    }
    so <- file.path(dir, "fork_server_native.so")
    dyn.load(so)
    .C("sandbox_fork_server", commandArgs(), length(commandArgs()))
    dyn.unload(so)
}))

/* R's own part of R's fork server: what makes a forked child of a warm R cheap (runtime/fork_server.R
 * calls sandbox_r_prepare() in the server, before fork_server_native.c serves; built and copied into the
 * slot like the other C helpers: sandbox/runtime_build.py). Two things, each measured per hello in
 * docs/sandbox.md:
 *
 * 1. R's exit without a shell. Rscript ends through R_CleanUp (the script's end, quit(), a top-level
 *    error's "Execution halted"), whose Unix version (Rstd_CleanUp, R's src/unix/sys-std.c) runs .Last,
 *    saves the workspace if asked, runs the exit finalizers, removes the editor's file, closes the
 *    graphics devices, removes the session's temporary directory, prints the warnings those steps raised,
 *    closes its script and exits with the status. The directory goes through R_system("rm -Rf <dir>"):
 *    /bin/sh and rm, two execs, a third of a hello's CPU. R_CleanUp calls through ptr_R_CleanUp
 *    (Rinterface.h), which now points at r_exit(): R's steps in R's order up to the devices (R's exported
 *    functions), then the directory removed here, as the slot uid, as rm -Rf removes it (depth first,
 *    links not followed, what cannot be removed left where it is); then the process forbids itself execve
 *    (a seccomp filter answering EACCES; no_new_privs is set in a slot) and hands over to R's own function
 *    with .Last and the save done: R's rm cannot start (system() answers status 127, which R_CleanTempDir
 *    ignores: no warning), the finalizers and devices are done, and R prints the pending warnings, closes
 *    its script and exits with the status, as before. An interactive session, a save still to be asked and
 *    R's suicide (SA_SUICIDE) go to R's own function untouched; where the filter cannot be installed, R's
 *    rm runs on a directory that is gone. One difference a program could see: an exit finalizer that
 *    registers another exit finalizer gets it run (R's own pass runs what the first pass left).
 *    This library stays mapped when R unloads it (RTLD_NODELETE: r_exit() must outlive fork_server.R's
 *    dyn.unload, which keeps R's list of DLLs as without it); a program that loads it again by its path
 *    gets an entry that does nothing (the server is prepared once).
 * 2. The heap as huge pages: the server's heap (R's nodes and vectors, ~32 MB) is collapsed into
 *    transparent huge pages (MADV_COLLAPSE, Linux 6.1; elsewhere nothing happens), so that a fork copies
 *    16 page-middle entries instead of 8,000 page-table entries (the fork: ~1 ms -> ~0.4 ms); a child's
 *    write still copies 4 KB only. Later allocations keep the system's policy (the region is not marked
 *    MADV_HUGEPAGE).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <ftw.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* R's (libR), weak so that a missing one leaves R's exit as it is. */
extern void (*ptr_R_CleanUp)(int saveact, int status, int run_last) __attribute__((weak));
extern char *R_TempDir __attribute__((weak));
extern int SaveAction __attribute__((weak));
extern int R_Interactive __attribute__((weak));
extern int R_DirtyImage __attribute__((weak));
extern void R_dot_Last(void) __attribute__((weak));
extern void R_SaveGlobalEnv(void) __attribute__((weak));
extern void R_RunExitFinalizers(void) __attribute__((weak));
extern void Rf_CleanEd(void) __attribute__((weak));
extern void Rf_KillAllDevices(void) __attribute__((weak));

/* SA_TYPE (R_ext/RStartup.h) */
enum { SA_DEFAULT = 2, SA_NOSAVE = 3, SA_SAVE = 4, SA_SAVEASK = 5 };

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#define HUGE_PAGE (2UL << 20)

static void (*r_cleanup)(int, int, int);     /* R's own: Rstd_CleanUp */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)ftw;
    if (flag == FTW_DP || flag == FTW_DNR)
        rmdir(path);
    else
        unlink(path);
    return 0;                                  /* as rm -f: go on with the rest */
}

/* From now on execve and execveat fail with EACCES (other architectures' calls: the slot's filters). */
static void forbid_exec(void) {
#ifdef NATIVE_ARCH
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execve, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execveat, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
    };
    struct sock_fprog prog = {sizeof code / sizeof code[0], code};
    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
#endif
}

static void r_exit(int saveact, int status, int run_last) {
    int act = saveact == SA_DEFAULT || (saveact == SA_SAVEASK && !R_Interactive) ? SaveAction : saveact;
    if (R_Interactive || (act != SA_NOSAVE && act != SA_SAVE)) {
        r_cleanup(saveact, status, run_last);              /* asking, a suicide: R's own, as it is */
        return;
    }
    if (run_last)
        R_dot_Last();
    if (act == SA_SAVE && R_DirtyImage)
        R_SaveGlobalEnv();
    R_RunExitFinalizers();
    Rf_CleanEd();
    Rf_KillAllDevices();
    if (R_TempDir)
        nftw(R_TempDir, remove_entry, 32, FTW_DEPTH | FTW_PHYS);
    forbid_exec();
    r_cleanup(SA_NOSAVE, status, 0);                        /* never returns: exit(status) */
}

static void install_exit(void) {
    Dl_info self;
    if (!&ptr_R_CleanUp || !ptr_R_CleanUp || !&R_TempDir || !&SaveAction || !&R_Interactive || !&R_DirtyImage ||
        !R_dot_Last || !R_SaveGlobalEnv || !R_RunExitFinalizers || !Rf_CleanEd || !Rf_KillAllDevices)
        return;
    if (!dladdr((void *)r_exit, &self) || !dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE))
        return;                                              /* r_exit() must outlive dyn.unload */
    r_cleanup = ptr_R_CleanUp;
    ptr_R_CleanUp = r_exit;
}

/* The whole 2 MB pages of the heap and of large anonymous mappings, collapsed into huge pages. */
static void collapse_heap(void) {
    FILE *maps = fopen("/proc/self/maps", "re");
    char line[512];
    if (!maps)
        return;
    while (fgets(line, sizeof line, maps)) {
        unsigned long lo, hi, offset, inode;
        char perms[5], dev[16], name[256] = "";
        if (sscanf(line, "%lx-%lx %4s %lx %15s %lu %255s", &lo, &hi, perms, &offset, dev, &inode, name) < 6 ||
            strncmp(perms, "rw", 2) != 0 || inode != 0 || (name[0] && strcmp(name, "[heap]") != 0))
            continue;
        unsigned long start = (lo + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1), end = hi & ~(HUGE_PAGE - 1);
        if (end > start)
            madvise((void *)start, end - start, MADV_COLLAPSE);
    }
    fclose(maps);
}

/* .C entry (fork_server.R, in the server, before it serves). Once: later calls do nothing. */
void sandbox_r_prepare(void) {
    static int prepared;
    if (prepared)
        return;
    prepared = 1;
    install_exit();
    collapse_heap();
}

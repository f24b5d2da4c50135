/*
 * libstrata_mpiio.so: MPI-IO layout hints for files on a Strata mount.
 *
 * A PMPI library: it defines MPI_File_open and the Fortran entry points of
 * MPI_FILE_OPEN. When the MPI_Info of an open has any of striping_factor,
 * striping_unit or strata_scheme, rank 0 of the communicator checks that the
 * path is on a Strata mount (a FUSE file system whose parent directory
 * answers getxattr("user.strata.layout")) and that the file does not exist
 * yet; then it creates the file and sets its layout to
 * "width=<striping_factor>,unit=<striping_unit>,scheme=<strata_scheme>"
 * (the keys given only) before any data is written. Every rank then waits
 * on PMPI_Barrier(comm), so that the collective open finds the file, and
 * calls PMPI_File_open with the application's arguments: exactly once per
 * rank on every path.
 *
 * No policy here: the MDS validates the layout string, and Go's
 * mpiio.Layout says the same in the hint's terms (mpiio.Spec is this
 * mapping). Failing to apply hints is not fatal, as with ROMIO's Lustre
 * driver: rank 0 says so once per process on stderr, in one line, and the
 * open goes on. STRATA_MPIIO_DEBUG=1 makes rank 0 say what it did.
 *
 * The barrier happens whenever a layout hint is present: MPI requires
 * reserved hints to have the same value on all processes, so all ranks
 * agree on it without talking. Fortran's mpi_f08 module does not go through
 * these entry points (see docs/mpiio.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#define FUSE_SUPER_MAGIC 0x65735546
#define LAYOUT_XATTR "user.strata.layout"
#define NHINTS 3
#define SPEC_MAX (NHINTS * (MPI_MAX_INFO_VAL + 16))
#define GIVEN_MAX (NHINTS * (MPI_MAX_INFO_KEY + MPI_MAX_INFO_VAL + 2))

/* The layout hints, in the order of the layout string (mpiio.Spec). */
static const char *const hint_keys[NHINTS] = {"striping_factor", "striping_unit", "strata_scheme"};
static const char *const hint_items[NHINTS] = {"width", "unit", "scheme"};

/* File system prefixes ROMIO and OMPIO accept before a path ("ufs:/a/b"). */
static const char *const fs_prefixes[] = {"ufs", "nfs", "lustre", "gpfs", "panfs", "pvfs2", "xfs",
                                          "testfs", "ime", "daos", NULL};

/* reported: this process has printed its one failure line. */
static int reported;

static int debug_enabled(void)
{
    const char *v = getenv("STRATA_MPIIO_DEBUG");
    return v != NULL && strcmp(v, "1") == 0;
}

/* hints is the layout hints of one open, as the shim sees them. */
struct hints {
    int n;                 /* layout hints present */
    int comma;             /* a value has a comma: it would splice items */
    char spec[SPEC_MAX];   /* "width=4,unit=1048576" */
    char given[GIVEN_MAX]; /* "striping_factor=4 striping_unit=1048576", for messages */
};

/* read_hints fills h from info. */
static void read_hints(MPI_Info info, struct hints *h)
{
    char val[MPI_MAX_INFO_VAL + 1];
    int i, flag;
    size_t sl = 0, gl = 0;

    memset(h, 0, sizeof *h);
    for (i = 0; i < NHINTS; i++) {
        flag = 0;
        if (PMPI_Info_get(info, hint_keys[i], MPI_MAX_INFO_VAL, val, &flag) != MPI_SUCCESS || !flag)
            continue;
        val[MPI_MAX_INFO_VAL] = '\0';
        if (strchr(val, ',') != NULL)
            h->comma = 1;
        sl += (size_t)snprintf(h->spec + sl, sizeof h->spec - sl, "%s%s=%s", h->n ? "," : "", hint_items[i], val);
        gl += (size_t)snprintf(h->given + gl, sizeof h->given - gl, "%s%s=%s", h->n ? " " : "", hint_keys[i], val);
        h->n++;
    }
}

/* strip_prefix returns path without a file system prefix such as "ufs:". */
static const char *strip_prefix(const char *path)
{
    const char *colon = strchr(path, ':');
    int i;

    if (colon == NULL)
        return path;
    for (i = 0; fs_prefixes[i] != NULL; i++) {
        size_t n = strlen(fs_prefixes[i]);
        if ((size_t)(colon - path) == n && strncmp(path, fs_prefixes[i], n) == 0)
            return colon + 1;
    }
    return path;
}

/* on_strata reports whether path's parent directory is on a Strata mount. */
static int on_strata(const char *path)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    struct statfs st;

    if (slash == NULL) {
        strcpy(dir, ".");
    } else if (slash == path) {
        strcpy(dir, "/");
    } else {
        size_t n = (size_t)(slash - path);
        if (n >= sizeof dir)
            return 0;
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    if (statfs(dir, &st) != 0 || st.f_type != FUSE_SUPER_MAGIC)
        return 0;
    return getxattr(dir, LAYOUT_XATTR, NULL, 0) >= 0;
}

static void debugf(const char *path, const char *what, const char *detail)
{
    if (debug_enabled())
        fprintf(stderr, "strata-mpiio: debug: %s: %s%s\n", path, what, detail);
}

/* report prints the one failure line of this process. */
static void report(const struct hints *h, const char *path, const char *why)
{
    if (reported && !debug_enabled())
        return;
    reported = 1;
    fprintf(stderr, "strata-mpiio: could not apply hints %s to %s: %s (the file keeps its directory's layout)\n",
            h->given, path, why);
}

/* apply is rank 0's part: create the new file with the layout h asks for. */
static void apply(const char *filename, int amode, const struct hints *h, const char *via)
{
    const char *path = strip_prefix(filename);
    int fd, err;

    if (debug_enabled())
        fprintf(stderr, "strata-mpiio: debug: %s %s: layout hints %s\n", via, filename, h->given);
    if (!(amode & MPI_MODE_CREATE) || (amode & MPI_MODE_RDONLY)) {
        debugf(path, "not created by this open", "; nothing to do");
        return;
    }
    if (!on_strata(path)) {
        debugf(path, "not on a Strata mount", "; nothing to do");
        return;
    }
    if (h->comma) {
        report(h, path, "a value contains a comma");
        return;
    }
    if (amode & MPI_MODE_EXCL) {
        report(h, path, "MPI_MODE_EXCL is set, so the file cannot be created before the open");
        return;
    }
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666); /* the kernel applies the umask */
    if (fd < 0) {
        if (errno == EEXIST)
            debugf(path, "exists", "; it keeps its layout");
        else
            report(h, path, strerror(errno));
        return;
    }
    if (fsetxattr(fd, LAYOUT_XATTR, h->spec, strlen(h->spec), 0) != 0) {
        err = errno;
        close(fd);
        report(h, path, strerror(err));
        return;
    }
    if (close(fd) != 0) {
        report(h, path, strerror(errno));
        return;
    }
    debugf(path, "created with layout ", h->spec);
}

static int strata_file_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh,
                            const char *via)
{
    struct hints h;
    int rank = -1;

    h.n = 0;
    if (comm != MPI_COMM_NULL && filename != NULL && info != MPI_INFO_NULL)
        read_hints(info, &h);
    if (h.n > 0 && PMPI_Comm_rank(comm, &rank) == MPI_SUCCESS) {
        if (rank == 0)
            apply(filename, amode, &h, via);
        PMPI_Barrier(comm);
    }
    return PMPI_File_open(comm, filename, amode, info, fh);
}

int MPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh)
{
    return strata_file_open(comm, filename, amode, info, fh, "MPI_File_open");
}

/*
 * Fortran (mpif.h and the mpi module): Open MPI's MPI_FILE_OPEN calls
 * PMPI_File_open directly, so it is wrapped here too. The file name is a
 * blank-padded Fortran string whose length comes as a hidden argument
 * (size_t with gfortran 8 and later); leading and trailing blanks are
 * dropped, as Open MPI does.
 */
static void fortran_file_open(MPI_Fint *comm, const char *name, MPI_Fint *amode, MPI_Fint *info, MPI_Fint *fh,
                              MPI_Fint *ierr, size_t len)
{
    MPI_File c_fh = MPI_FILE_NULL;
    char *c_name;
    int rc;

    while (len > 0 && *name == ' ') {
        name++;
        len--;
    }
    while (len > 0 && name[len - 1] == ' ')
        len--;
    c_name = malloc(len + 1);
    if (c_name == NULL) { /* as Open MPI's own binding: no open without the name */
        *ierr = (MPI_Fint)MPI_ERR_NO_MEM;
        return;
    }
    memcpy(c_name, name, len);
    c_name[len] = '\0';
    rc = strata_file_open(PMPI_Comm_f2c(*comm), c_name, (int)*amode, PMPI_Info_f2c(*info), &c_fh,
                          "Fortran MPI_FILE_OPEN");
    free(c_name);
    *fh = PMPI_File_c2f(c_fh);
    *ierr = (MPI_Fint)rc;
}

void mpi_file_open_(MPI_Fint *, char *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, size_t);
void mpi_file_open__(MPI_Fint *, char *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, size_t);
void mpi_file_open(MPI_Fint *, char *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, size_t);
void MPI_FILE_OPEN(MPI_Fint *, char *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, size_t);

void mpi_file_open_(MPI_Fint *comm, char *name, MPI_Fint *amode, MPI_Fint *info, MPI_Fint *fh, MPI_Fint *ierr,
                    size_t len)
{
    fortran_file_open(comm, name, amode, info, fh, ierr, len);
}

void mpi_file_open__(MPI_Fint *comm, char *name, MPI_Fint *amode, MPI_Fint *info, MPI_Fint *fh, MPI_Fint *ierr,
                     size_t len)
{
    fortran_file_open(comm, name, amode, info, fh, ierr, len);
}

void mpi_file_open(MPI_Fint *comm, char *name, MPI_Fint *amode, MPI_Fint *info, MPI_Fint *fh, MPI_Fint *ierr,
                   size_t len)
{
    fortran_file_open(comm, name, amode, info, fh, ierr, len);
}

void MPI_FILE_OPEN(MPI_Fint *comm, char *name, MPI_Fint *amode, MPI_Fint *info, MPI_Fint *fh, MPI_Fint *ierr,
                   size_t len)
{
    fortran_file_open(comm, name, amode, info, fh, ierr, len);
}

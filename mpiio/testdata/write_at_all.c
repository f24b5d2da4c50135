/*
 * write_at_all FILE [key=value ...]
 *
 * The shared-file MPI-IO test of mpiio/mpirun_test.go. Every rank writes a
 * 4 MiB block of its own pattern at rank*4MiB with MPI_File_write_at_all
 * into FILE, opened with MPI_MODE_CREATE|MPI_MODE_WRONLY and the hints
 * given as key=value arguments in an MPI_Info; then MPI_File_sync and
 * close. It reopens the file read-only without hints, and every rank reads
 * the whole file back with MPI_File_read_at_all and checks every byte and
 * the file's size. Rank 0 prints one summary line; the exit status is 0
 * only if every rank saw every byte right.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK (4 << 20)

/* pattern is the byte at offset off of the file, which rank wrote. */
static unsigned char pattern(long long off, int rank)
{
    uint32_t x = (uint32_t)(off / 4) * 2654435761u ^ (uint32_t)(rank + 1) * 0x9E3779B9u;
    return (unsigned char)(x >> (8 * (off % 4)));
}

static int check(int rc, const char *what, int rank)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;

    if (rc == MPI_SUCCESS)
        return 0;
    MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "write_at_all: rank %d: %s: %s\n", rank, what, msg);
    return 1;
}

int main(int argc, char **argv)
{
    int rank, size, i, errs = 0, total = 0, nkeys = 0;
    long long bad = 0, allbad = 0;
    MPI_Info info;
    MPI_File fh;
    MPI_Status st;
    MPI_Offset fsize = 0;
    unsigned char *buf;
    const char *path;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: write_at_all FILE [key=value ...]\n");
        MPI_Finalize();
        return 2;
    }
    path = argv[1];
    MPI_Info_create(&info);
    for (i = 2; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (eq == NULL) {
            if (rank == 0)
                fprintf(stderr, "write_at_all: %s: want key=value\n", argv[i]);
            MPI_Finalize();
            return 2;
        }
        *eq = '\0';
        MPI_Info_set(info, argv[i], eq + 1);
        *eq = '=';
    }

    buf = malloc((size_t)BLOCK * (size_t)size);
    if (buf == NULL) {
        fprintf(stderr, "write_at_all: rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (i = 0; i < BLOCK; i++)
        buf[i] = pattern((long long)rank * BLOCK + i, rank);

    errs += check(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, info, &fh), "open", rank);
    if (!errs) {
        errs += check(MPI_File_write_at_all(fh, (MPI_Offset)rank * BLOCK, buf, BLOCK, MPI_BYTE, &st),
                      "write_at_all", rank);
        errs += check(MPI_File_sync(fh), "sync", rank);
        {
            MPI_Info used;
            if (MPI_File_get_info(fh, &used) == MPI_SUCCESS) {
                MPI_Info_get_nkeys(used, &nkeys);
                MPI_Info_free(&used);
            }
        }
        errs += check(MPI_File_close(&fh), "close", rank);
    }

    /* Reopen without hints; every rank reads and checks the whole file. */
    memset(buf, 0, (size_t)BLOCK * (size_t)size);
    if (!errs)
        errs += check(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), "reopen", rank);
    if (!errs) {
        errs += check(MPI_File_get_size(fh, &fsize), "get_size", rank);
        errs += check(MPI_File_read_at_all(fh, 0, buf, BLOCK * size, MPI_BYTE, &st), "read_at_all", rank);
        errs += check(MPI_File_close(&fh), "close after read", rank);
        if (fsize != (MPI_Offset)BLOCK * size) {
            fprintf(stderr, "write_at_all: rank %d: size %lld, want %lld\n", rank, (long long)fsize,
                    (long long)BLOCK * size);
            errs++;
        }
        for (i = 0; i < BLOCK * size; i++) {
            if (buf[i] != pattern(i, i / BLOCK)) {
                if (bad == 0)
                    fprintf(stderr, "write_at_all: rank %d: first wrong byte at offset %d: %u, want %u\n", rank,
                            i, buf[i], pattern(i, i / BLOCK));
                bad++;
            }
        }
    }

    MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&bad, &allbad, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("write_at_all: %d ranks wrote %lld bytes to %s with %d hints (get_info: %d keys), "
               "read back: %lld wrong bytes, %d errors: %s\n",
               size, (long long)BLOCK * size, path, argc - 2, nkeys, allbad, total,
               total == 0 && allbad == 0 ? "OK" : "FAILED");
    free(buf);
    MPI_Info_free(&info);
    MPI_Finalize();
    return total == 0 && allbad == 0 ? 0 : 1;
}

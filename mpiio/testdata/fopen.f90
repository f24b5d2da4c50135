! fopen_f90 FILE [key=value ...]
!
! The Fortran check of mpiio/mpirun_test.go: MPI_FILE_OPEN through the mpi
! module (Open MPI's mpif-h entry point mpi_file_open_, which
! libstrata_mpiio.so wraps) with the hints given as arguments. Every rank
! writes 1 MiB of 32-bit integers, value rank*262144 + i for i = 0..262143,
! at rank MiB with MPI_FILE_WRITE_AT_ALL. Rank 0 prints one line.
program fopen
  use mpi
  implicit none
  integer, parameter :: n = 262144
  integer :: ierr, rank, nprocs, info, fh, i, eq, nargs
  integer :: buf(n)
  integer(kind=MPI_OFFSET_KIND) :: off
  character(len=4096) :: path, arg

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  nargs = command_argument_count()
  if (nargs < 1) then
    if (rank == 0) print '(a)', 'usage: fopen_f90 FILE [key=value ...]'
    call MPI_ABORT(MPI_COMM_WORLD, 2, ierr)
  end if
  call get_command_argument(1, path)
  call MPI_INFO_CREATE(info, ierr)
  do i = 2, nargs
    call get_command_argument(i, arg)
    eq = index(arg, '=')
    if (eq > 1) call MPI_INFO_SET(info, arg(1:eq-1), trim(arg(eq+1:)), ierr)
  end do

  do i = 1, n
    buf(i) = rank * n + (i - 1)
  end do
  ! path is blank-padded to 4096 characters: the binding must trim it.
  call MPI_FILE_OPEN(MPI_COMM_WORLD, path, MPI_MODE_CREATE + MPI_MODE_WRONLY, info, fh, ierr)
  if (ierr /= MPI_SUCCESS) then
    print '(a,i0,a,i0)', 'fopen_f90: rank ', rank, ': MPI_FILE_OPEN failed: ', ierr
    call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
  end if
  off = int(rank, MPI_OFFSET_KIND) * n * 4
  call MPI_FILE_WRITE_AT_ALL(fh, off, buf, n, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
  if (ierr /= MPI_SUCCESS) call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
  call MPI_FILE_CLOSE(fh, ierr)
  if (ierr /= MPI_SUCCESS) call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
  call MPI_INFO_FREE(info, ierr)
  if (rank == 0) print '(a,i0,a,a)', 'fopen_f90: ', nprocs, ' ranks wrote 1 MiB each to ', trim(path)
  call MPI_FINALIZE(ierr)
end program fopen

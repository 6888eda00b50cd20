/* A real MPI client for the integration tests: N ping-pongs of SIZE bytes
 * between ranks 0 and 1, every payload checked. Run with Open MPI's mtl ofi. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int n = argc > 1 ? atoi(argv[1]) : 1000;
  const int size = argc > 2 ? atoi(argv[2]) : 4096;
  unsigned char* buf = malloc((size_t)size);
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    if (rank == 0) {
      memset(buf, (unsigned char)i, (size_t)size);
      MPI_Send(buf, size, MPI_BYTE, 1, i, MPI_COMM_WORLD);
      MPI_Recv(buf, size, MPI_BYTE, 1, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      for (int k = 0; k < size; ++k) bad += buf[k] != (unsigned char)(i + 1);
    } else if (rank == 1) {
      MPI_Recv(buf, size, MPI_BYTE, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      for (int k = 0; k < size; ++k) bad += buf[k] != (unsigned char)i;
      memset(buf, (unsigned char)(i + 1), (size_t)size);
      MPI_Send(buf, size, MPI_BYTE, 0, i, MPI_COMM_WORLD);
    }
  }
  printf("rank %d: %d round trips, %d bad bytes\n", rank, n, bad);
  free(buf);
  MPI_Finalize();
  return bad ? 1 : 0;
}

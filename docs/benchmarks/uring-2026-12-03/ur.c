// ur.c: the sender's per-file system calls (open, read, close of page-cached files)
// against io_uring (16 files per submit: openat into a direct descriptor, read,
// close, linked). Issue #30, docs/benchmarks/trees.md "What a system call costs here".
//   apt-get install -y liburing-dev && gcc -O2 -Wall -o ur ur.c -luring
//   (cd TREE && find . -type f) > files.txt; ./ur sys TREE files.txt; ./ur uring TREE files.txt
#define _GNU_SOURCE
#include <liburing.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <time.h>

static double cpu(void){struct rusage r;getrusage(RUSAGE_SELF,&r);return r.ru_utime.tv_sec+r.ru_stime.tv_sec+(r.ru_utime.tv_usec+r.ru_stime.tv_usec)/1e6;}
static double wall(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
#define B 16
#define BUF 65536
int main(int argc,char**argv){
  const char*mode=argv[1]; int root=open(argv[2],O_RDONLY|O_DIRECTORY);
  FILE*f=fopen(argv[3],"r"); static char*names[200000]; int n=0; char line[4096];
  while(fgets(line,sizeof line,f)){line[strcspn(line,"\n")]=0;names[n++]=strdup(line);}
  static char bufs[B][BUF]; long total=0;
  double c0=cpu(),w0=wall();
  if(!strcmp(mode,"sys")){
    for(int i=0;i<n;i++){int fd=openat(root,names[i],O_RDONLY|O_CLOEXEC);if(fd<0){perror(names[i]);exit(1);}
      ssize_t r=pread(fd,bufs[0],BUF,0); total+=r; close(fd);}
  } else {
    struct io_uring ring; if(io_uring_queue_init(4*B,&ring,0)){perror("init");exit(1);}
    if(io_uring_register_files_sparse(&ring,B)){perror("sparse");exit(1);}
    for(int i=0;i<n;i+=B){int m=(n-i<B)?n-i:B;
      for(int j=0;j<m;j++){struct io_uring_sqe*s=io_uring_get_sqe(&ring);
        io_uring_prep_openat_direct(s,root,names[i+j],O_RDONLY,0,j); s->flags|=IOSQE_IO_LINK; s->user_data=0;
        s=io_uring_get_sqe(&ring); io_uring_prep_read(s,j,bufs[j],BUF,0); s->flags|=IOSQE_FIXED_FILE|IOSQE_IO_HARDLINK; s->user_data=1;
        s=io_uring_get_sqe(&ring); io_uring_prep_close_direct(s,j); s->user_data=2;}
      io_uring_submit_and_wait(&ring,3*m);
      struct io_uring_cqe*cqe; unsigned head; int cnt=0;
      io_uring_for_each_cqe(&ring,head,cqe){ if(cqe->res<0){fprintf(stderr,"op %llu: %s\n",cqe->user_data,strerror(-cqe->res));exit(1);} if(cqe->user_data==1) total+=cqe->res; cnt++;}
      io_uring_cq_advance(&ring,cnt);
    }
  }
  printf("%s: %d files, %ld bytes, %.2f us CPU/file, %.3f s wall\n",mode,n,total,(cpu()-c0)/n*1e6,wall()-w0);
}

// ur2.c: the receiver's per-file system calls (create without a name, check the
// folder, write 8 KiB, check again, name it, close) against io_uring (16 files per
// round: the creates in one submit, then write, statx, linkat, close linked).
// Issue #30, docs/benchmarks/trees.md "What a system call costs here".
//   gcc -O2 -Wall -o ur2 ur2.c -luring; ./ur2 sys /dev/shm/a 15000; ./ur2 uring /dev/shm/b 15000
#define _GNU_SOURCE
#include <liburing.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <time.h>
static double cpu(void){struct rusage r;getrusage(RUSAGE_SELF,&r);return r.ru_utime.tv_sec+r.ru_stime.tv_sec+(r.ru_utime.tv_usec+r.ru_stime.tv_usec)/1e6;}
static double wall(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
#define B 16
int main(int argc,char**argv){
  const char*mode=argv[1]; const char*dst=argv[2]; int n=atoi(argv[3]);
  static char data[8192]; memset(data,'x',sizeof data);
  mkdir(dst,0755); int top=open(dst,O_RDONLY|O_DIRECTORY);
  int dfd=-1; char name[64]; struct stat st;
  double c0=cpu(),w0=wall();
  struct io_uring ring; if(strcmp(mode,"sys")) io_uring_queue_init(8*B,&ring,0);
  for(int i=0;i<n;i+=B){
    if(i%144==0){sprintf(name,"d%d",i/144); mkdirat(top,name,0755); if(dfd>=0)close(dfd); dfd=openat(top,name,O_RDONLY|O_DIRECTORY);}
    int m=(n-i<B)?n-i:B;
    if(!strcmp(mode,"sys")){
      for(int j=0;j<m;j++){int fd=openat(dfd,".",O_TMPFILE|O_RDWR,0644); fstatat(dfd,"..",&st,AT_SYMLINK_NOFOLLOW); pwrite(fd,data,sizeof data,0);
        fstatat(dfd,"..",&st,AT_SYMLINK_NOFOLLOW); sprintf(name,"f%d",i+j); if(linkat(fd,"",dfd,name,AT_EMPTY_PATH)){perror("linkat");exit(1);} close(fd);}
    } else {
      int fds[B];
      for(int j=0;j<m;j++){struct io_uring_sqe*s=io_uring_get_sqe(&ring); io_uring_prep_openat(s,dfd,".",O_TMPFILE|O_RDWR,0644); s->user_data=j;}
      io_uring_submit_and_wait(&ring,m);
      struct io_uring_cqe*cqe; unsigned head; int cnt=0;
      io_uring_for_each_cqe(&ring,head,cqe){if(cqe->res<0){fprintf(stderr,"open %s\n",strerror(-cqe->res));exit(1);} fds[cqe->user_data]=cqe->res; cnt++;}
      io_uring_cq_advance(&ring,cnt);
      static char names[B][32]; static struct statx stx[B];
      for(int j=0;j<m;j++){sprintf(names[j],"f%d",i+j);
        struct io_uring_sqe*s=io_uring_get_sqe(&ring); io_uring_prep_write(s,fds[j],data,sizeof data,0); s->flags|=IOSQE_IO_HARDLINK; s->user_data=100;
        s=io_uring_get_sqe(&ring); io_uring_prep_statx(s,dfd,"..",AT_SYMLINK_NOFOLLOW,STATX_INO,&stx[j]); s->flags|=IOSQE_IO_HARDLINK; s->user_data=101;
        s=io_uring_get_sqe(&ring); io_uring_prep_linkat(s,fds[j],"",dfd,names[j],AT_EMPTY_PATH); s->flags|=IOSQE_IO_HARDLINK; s->user_data=102;
        s=io_uring_get_sqe(&ring); io_uring_prep_close(s,fds[j]); s->user_data=103;}
      io_uring_submit_and_wait(&ring,4*m); cnt=0;
      io_uring_for_each_cqe(&ring,head,cqe){if(cqe->res<0){fprintf(stderr,"op %llu %s\n",cqe->user_data,strerror(-cqe->res));exit(1);} cnt++;}
      io_uring_cq_advance(&ring,cnt);
    }
  }
  printf("%s %s: %.2f us CPU/file, %.3f s wall\n",mode,dst,(cpu()-c0)/n*1e6,wall()-w0);
}

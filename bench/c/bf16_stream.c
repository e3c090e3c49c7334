// gcc -O2 -march=native -pthread bench/c/bf16_stream.c -o /tmp/bf16_stream
// /tmp/bf16_stream MODEL.safetensors map|anon|thp AHEAD_BYTES
// A bf16 row's decoding work (32 bf16 widened by a shift, two FMAs) over a whole file, rows of
// 2,048 split between 2 threads, best of 8: what memory feeds a model that outgrows the caches,
// from the mapped file, anonymous 4 KiB pages, or 2 MiB pages (MADV_HUGEPAGE).
#define _GNU_SOURCE
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
static const unsigned short *W; static size_t ROWS; static const size_t COLS=2048; static float X[2048]; static float *OUT; static int AHEAD;
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static void *work(void *arg){ long t=(long)arg; size_t a=ROWS*t/2,b=ROWS*(t+1)/2;
 for(size_t r=a;r<b;r++){ const unsigned short *row=W+r*COLS; __m512 acc0=_mm512_setzero_ps(),acc1=_mm512_setzero_ps();
  for(size_t c=0;c<COLS;c+=32){ if(AHEAD) _mm_prefetch((const char*)(row+c)+AHEAD,_MM_HINT_T1);
   __m512i v=_mm512_loadu_si512(row+c);
   __m512 lo=_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(v)),16));
   __m512 hi=_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(v,1)),16));
   acc0=_mm512_fmadd_ps(lo,_mm512_loadu_ps(X+c),acc0); acc1=_mm512_fmadd_ps(hi,_mm512_loadu_ps(X+c+16),acc1);}
  OUT[r]=_mm512_reduce_add_ps(_mm512_add_ps(acc0,acc1)); } return 0;}
static double run(){ pthread_t th[2]; double t0=now(); for(long i=0;i<2;i++) pthread_create(&th[i],0,work,(void*)i); for(int i=0;i<2;i++) pthread_join(th[i],0); return now()-t0; }
int main(int argc,char**argv){ int fd=open(argv[1],O_RDONLY); struct stat st; fstat(fd,&st); size_t len=st.st_size&~((size_t)4095); AHEAD=atoi(argv[3]);
 void *m=mmap(0,len,PROT_READ,MAP_PRIVATE,fd,0); const char*mode=argv[2];
 if(strcmp(mode,"map")==0) W=m; else { void *p=mmap(0,len+(2<<20),PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0); p=(void*)(((size_t)p+(2<<20)-1)&~((size_t)(2<<20)-1));
   madvise(p,len,strcmp(mode,"thp")==0?MADV_HUGEPAGE:MADV_NOHUGEPAGE); memcpy(p,m,len); W=p; }
 ROWS=len/(COLS*2); OUT=malloc(ROWS*4); for(int i=0;i<2048;i++)X[i]=1.0f/(i+1);
 double best=1e9; for(int i=0;i<8;i++){double t=run(); if(t<best)best=t;} printf("%s ahead=%d: %.2f GB/s (%.1f ms)\n",mode,AHEAD,len/best/1e9,best*1e3);
 FILE*f=fopen("/proc/self/smaps_rollup","r"); char line[256]; while(fgets(line,256,f)) if(strstr(line,"AnonHugePages")) fputs(line,stdout); return 0;}

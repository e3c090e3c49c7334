// Does running AMX (or AVX-512) between scalar work slow the scalar work (a lower clock)?
#define _GNU_SOURCE
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
struct cfg { unsigned char palette, start; unsigned char res[14]; unsigned short colsb[16]; unsigned char rows[16]; };
static signed char A[16*64*64] __attribute__((aligned(64))), Bt[16*64] __attribute__((aligned(64))); static int C[256];
__attribute__((target("amx-tile,amx-int8"))) static void amx_burst(int n){ struct cfg c={0}; c.palette=1; for(int t=0;t<4;t++){c.colsb[t]=64;c.rows[t]=16;} _tile_loadconfig(&c);
 _tile_zero(0); for(int i=0;i<n;i++){ _tile_loadd(1, A + (i%64)*64, 64*64); _tile_loadd(2, Bt, 64); _tile_dpbssd(0,1,2);} _tile_stored(0,C,64); _tile_release(); }
__attribute__((target("avx512f"))) static float avx512_burst(int n){ __m512 a=_mm512_set1_ps(1.0f), b=_mm512_set1_ps(1.0001f), s0=a,s1=a,s2=a,s3=a; for(int i=0;i<n*8;i++){ s0=_mm512_fmadd_ps(s0,b,a); s1=_mm512_fmadd_ps(s1,b,a); s2=_mm512_fmadd_ps(s2,b,a); s3=_mm512_fmadd_ps(s3,b,a);} return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0,s1),_mm512_add_ps(s2,s3))); }
static volatile long sink;
static long scalar(long n){ long x=1; for(long i=0;i<n;i++){ x = x*3 + (x>>7); } return x; }
int main(){ syscall(SYS_arch_prctl,0x1023,18); float f=0;
 for(int round=0;round<3;round++) for(int mode=0;mode<3;mode++){ double tot=0; double t0=now();
  for(int it=0;it<2000;it++){ if(mode==1) amx_burst(200); else if(mode==2) f+=avx512_burst(200); double a=now(); sink+=scalar(20000); tot+=now()-a; }
  printf("round %d %-8s scalar chunk %.2f us (total %.0f ms)\n", round, mode==0?"none":mode==1?"amx":"avx512", tot/2000*1e6, (now()-t0)*1e3); }
 printf("%f %d\n", f, C[0]); }

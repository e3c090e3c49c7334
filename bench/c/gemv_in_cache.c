// gcc -O3 -march=native -pthread bench/c/gemv_in_cache.c -o /tmp/gemv_in_cache && /tmp/gemv_in_cache
// The decoding GEMV's ceiling in cache: q8_0 (int8 + one f16 scale per 32) against bf16,
// f32 activations, 8 and 16 lanes, rows split between 2 threads; a matrix of the benchmark
// config's layer size, read many times (in L2/L3).
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
enum { K = 384, N = 26624 }; // 10.2 M weights: the benchmark config's layers
static signed char *Q; static unsigned short *S, *B; static float X[K]; float OUT[N];
static int MODE;
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
__attribute__((target("avx2,fma,f16c"))) static void q8_256(int a,int b){
 for(int r=a;r<b;r++){ const signed char*q=Q+(size_t)r*K; __m256 acc=_mm256_setzero_ps();
  for(int g=0;g<K/32;g++){ const signed char*p=q+32*g; const float*x=X+32*g; __m256 s0=_mm256_setzero_ps(),s1=_mm256_setzero_ps();
   s0=_mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)p))),_mm256_loadu_ps(x),s0);
   s0=_mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)(p+8)))),_mm256_loadu_ps(x+8),s0);
   s1=_mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)(p+16)))),_mm256_loadu_ps(x+16),s1);
   s1=_mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)(p+24)))),_mm256_loadu_ps(x+24),s1);
   acc=_mm256_fmadd_ps(_mm256_add_ps(s0,s1),_mm256_cvtph_ps(_mm_set1_epi16(S[r*(K/32)+g])),acc);}
  __m128 s=_mm_add_ps(_mm256_castps256_ps128(acc),_mm256_extractf128_ps(acc,1)); s=_mm_hadd_ps(s,s); s=_mm_hadd_ps(s,s); OUT[r]=_mm_cvtss_f32(s);}}
__attribute__((target("avx512f,avx2,fma,f16c"))) static void q8_512(int a,int b){
 for(int r=a;r<b;r++){ const signed char*q=Q+(size_t)r*K; __m512 acc=_mm512_setzero_ps();
  for(int g=0;g<K/32;g++){ const signed char*p=q+32*g; const float*x=X+32*g;
   __m512 s=_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)p))),_mm512_loadu_ps(x));
   s=_mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)(p+16)))),_mm512_loadu_ps(x+16),s);
   acc=_mm512_fmadd_ps(s,_mm512_cvtph_ps(_mm256_set1_epi16(S[r*(K/32)+g])),acc);}
  OUT[r]=_mm512_reduce_add_ps(acc);}}
__attribute__((target("avx2,fma,f16c"))) static void bf_256(int a,int b){
 for(int r=a;r<b;r++){ const unsigned short*w=B+(size_t)r*K; __m256 acc[4]={0};
  for(int i=0;i<K;i+=32) for(int j=0;j<4;j++) acc[j]=_mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)(w+i+8*j))),16)),_mm256_loadu_ps(X+i+8*j),acc[j]);
  __m256 t=_mm256_add_ps(_mm256_add_ps(acc[0],acc[1]),_mm256_add_ps(acc[2],acc[3]));
  __m128 s=_mm_add_ps(_mm256_castps256_ps128(t),_mm256_extractf128_ps(t,1)); s=_mm_hadd_ps(s,s); s=_mm_hadd_ps(s,s); OUT[r]=_mm_cvtss_f32(s);}}
__attribute__((target("avx512f,avx2,fma,f16c"))) static void bf_512(int a,int b){
 for(int r=a;r<b;r++){ const unsigned short*w=B+(size_t)r*K; __m512 acc[2]={0};
  for(int i=0;i<K;i+=32) for(int j=0;j<2;j++) acc[j]=_mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)(w+i+16*j))),16)),_mm512_loadu_ps(X+i+16*j),acc[j]);
  OUT[r]=_mm512_reduce_add_ps(_mm512_add_ps(acc[0],acc[1]));}}
static void (*FN[4])(int,int)={q8_256,q8_512,bf_256,bf_512};
static const char*NAME[4]={"q8_0, 8 lanes","q8_0, 16 lanes","bf16, 8 lanes","bf16, 16 lanes"};
static void*work(void*t){ long i=(long)t; for(int rep=0;rep<20;rep++) FN[MODE](N*i/2,N*(i+1)/2); return 0; }
int main(){ Q=aligned_alloc(64,(size_t)N*K); S=aligned_alloc(64,(size_t)N*K/32*2); B=aligned_alloc(64,(size_t)N*K*2);
 srand(1); for(size_t i=0;i<(size_t)N*K;i++){Q[i]=rand()%255-127; B[i]=0x3f80|(rand()&0x7f);} for(int i=0;i<N*K/32;i++)S[i]=0x2000; for(int i=0;i<K;i++)X[i]=1.0f/(i+1);
 for(int round=0;round<3;round++) for(MODE=0;MODE<4;MODE++){ double best=1e9; for(int t=0;t<5;t++){ pthread_t th[2]; double t0=now(); for(long i=0;i<2;i++)pthread_create(&th[i],0,work,(void*)i); for(int i=0;i<2;i++)pthread_join(th[i],0); double e=(now()-t0)/20; if(e<best)best=e;}
  double bytes=(MODE<2)? (double)N*K*(1+2.0/32) : (double)N*K*2; printf("round %d %-15s %.3f ms a pass of 10.2 M weights: %.2f G weights/s, %.1f GB/s\n",round,NAME[MODE],best*1e3,(double)N*K/best/1e9,bytes/best/1e9);}
 double c=0; for(int i=0;i<N;i++) c+=OUT[i]; printf("checksum %g\n",c); return 0; }

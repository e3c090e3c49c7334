// gcc -O3 -march=native -pthread bench/c/gemv_vnni.c -o /tmp/gemv_vnni -lm && /tmp/gemv_vnni [K [THREADS [WEIGHTS]]]
// The q8_0 decoding GEMV with AVX-512 VNNI against the AVX2 loops, rows split between threads.
// x stays f32 in effect: each group of 32 inputs is a scale times integers of 24 bits, split
// into three signed bytes (balanced base 256). The weights, offset by 128 into unsigned bytes
// (one XOR), are VPDPBUSD's unsigned operand; each limb of x its signed one, read from memory.
// Each int32 lane sums 4 products exactly; the offset's share (128 · Σ x's integers over the
// lane's 4 inputs) is subtracted per lane; the lanes' groups are scaled (weight scale × x's
// scale) into f32 sums.
#define _GNU_SOURCE
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static int K = 384, N, THREADS = 2;
static signed char *Q; static unsigned short *S, *B; static float *X; float *OUT;
static signed char *XL[3];  // x's three limbs, [K] each
static float *CORR;         // [K/4]: 128 · Σ of the lane's 4 integers
static float *XS;           // [K/32]: x's scale per group
static int MODE;
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}

static void prepare_x(void){
  for (int g = 0; g < K/32; g++) {
    float m = 0; for (int i = 0; i < 32; i++) m = fmaxf(m, fabsf(X[32*g+i]));
    float xs = m > 0 ? m / 8355000.0f : 1; XS[g] = xs;
    for (int i = 0; i < 32; i++) {
      int v = (int)lrintf(X[32*g+i] / xs), v0 = v;
      int d3 = (signed char)(v & 255); v = (v - d3) >> 8;
      int d2 = (signed char)(v & 255); v = (v - d2) >> 8;
      XL[0][32*g+i] = v; XL[1][32*g+i] = d2; XL[2][32*g+i] = d3;
      (void)v0;
    }
  }
  for (int l = 0; l < K/4; l++) { long s = 0; for (int j = 0; j < 4; j++) { int i = 4*l+j; s += XL[0][i]*65536L + XL[1][i]*256L + XL[2][i]; } CORR[l] = 128.0f * (float)s; }
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma")))
static void q8_vnni(int a, int b){
  const __m512i flip = _mm512_set1_epi8((char)0x80);
  const __m512i spread = _mm512_setr_epi32(0,0,0,0,0,0,0,0,1,1,1,1,1,1,1,1);
  int G = K/32;
  for (int r = a; r < b; r++) {
    const signed char *q = Q + (size_t)r*K; const unsigned short *s = S + (size_t)r*G;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    for (int c = 0; c < K; c += 64) {
      __m512i w = _mm512_xor_si512(_mm512_loadu_si512(q + c), flip);
      __m512i a1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w, _mm512_loadu_si512(XL[0] + c));
      __m512i a2 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w, _mm512_loadu_si512(XL[1] + c));
      __m512i a3 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w, _mm512_loadu_si512(XL[2] + c));
      __m512 f = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a1), _mm512_set1_ps(65536.0f), _mm512_sub_ps(_mm512_cvtepi32_ps(a3), _mm512_loadu_ps(CORR + c/4)));
      f = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a2), _mm512_set1_ps(256.0f), f);
      // the two groups' scales: weight scale × x's scale, 8 lanes each
      __m128 ws = _mm_cvtph_ps(_mm_cvtsi32_si128(*(const int*)(s + c/32)));
      __m128 sc = _mm_mul_ps(ws, _mm_castsi128_ps(_mm_loadl_epi64((const __m128i*)(XS + c/32))));
      __m512 v = _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(sc));
      if ((c/64) & 1) acc1 = _mm512_fmadd_ps(f, v, acc1); else acc0 = _mm512_fmadd_ps(f, v, acc0);
    }
    OUT[r] = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
  }
}

__attribute__((target("avx2,fma,f16c"))) static void q8_256(int a,int b){
 for(int r=a;r<b;r++){ const signed char*q=Q+(size_t)r*K; __m256 acc=_mm256_setzero_ps(), acc2=_mm256_setzero_ps();
  for(int g=0;g<K/32;g++){ const signed char*p=q+32*g; const float*x=X+32*g; __m256 s0=_mm256_setzero_ps(),s1=_mm256_setzero_ps();
   s0=_mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)p))),_mm256_loadu_ps(x),s0);
   s0=_mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)(p+8)))),_mm256_loadu_ps(x+8),s0);
   s1=_mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)(p+16)))),_mm256_loadu_ps(x+16),s1);
   s1=_mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)(p+24)))),_mm256_loadu_ps(x+24),s1);
   __m256 t=_mm256_fmadd_ps(_mm256_add_ps(s0,s1),_mm256_cvtph_ps(_mm_set1_epi16(S[(size_t)r*(K/32)+g])),g&1?acc2:acc); if(g&1)acc2=t; else acc=t;}
  acc=_mm256_add_ps(acc,acc2);
  __m128 s=_mm_add_ps(_mm256_castps256_ps128(acc),_mm256_extractf128_ps(acc,1)); s=_mm_hadd_ps(s,s); s=_mm_hadd_ps(s,s); OUT[r]=_mm_cvtss_f32(s);}}
__attribute__((target("avx2,fma,f16c"))) static void bf_256(int a,int b){
 for(int r=a;r<b;r++){ const unsigned short*w=B+(size_t)r*K; __m256 acc[4]={0};
  for(int i=0;i<K;i+=32) for(int j=0;j<4;j++) acc[j]=_mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)(w+i+8*j))),16)),_mm256_loadu_ps(X+i+8*j),acc[j]);
  __m256 t=_mm256_add_ps(_mm256_add_ps(acc[0],acc[1]),_mm256_add_ps(acc[2],acc[3]));
  __m128 s=_mm_add_ps(_mm256_castps256_ps128(t),_mm256_extractf128_ps(t,1)); s=_mm_hadd_ps(s,s); s=_mm_hadd_ps(s,s); OUT[r]=_mm_cvtss_f32(s);}}
static void (*FN[3])(int,int)={q8_256,q8_vnni,bf_256};
static const char*NAME[3]={"q8_0 AVX2","q8_0 VNNI 512","bf16 AVX2"};
static void*work(void*t){ long i=(long)t; int a=N*i/THREADS, b=N*(i+1)/THREADS; for(int rep=0;rep<20;rep++) FN[MODE](a,b); return 0; }
int main(int argc, char **argv){
 if (argc > 1) K = atoi(argv[1]); if (argc > 2) THREADS = atoi(argv[2]);
 N = (argc > 3 ? atol(argv[3]) : 10223616) / K;
 Q=aligned_alloc(64,(size_t)N*K); S=aligned_alloc(64,(size_t)N*K/32*2); B=aligned_alloc(64,(size_t)N*K*2);
 X=aligned_alloc(64,K*4); OUT=aligned_alloc(64,N*4); for(int l=0;l<3;l++) XL[l]=aligned_alloc(64,K); CORR=aligned_alloc(64,K); XS=aligned_alloc(64,K/8+64);
 srand(1); for(size_t i=0;i<(size_t)N*K;i++){Q[i]=rand()%255-127; B[i]=0x3f80|(rand()&0x7f);}
 for(size_t i=0;i<(size_t)N*K/32;i++) S[i]=_cvtss_sh(ldexpf(1.0f + (rand()%1000)/1000.0f, -7 - rand()%3), 0);
 for(int i=0;i<K;i++) X[i]=(rand()%2000-1000)/1000.0f * ldexpf(1.0f, -(rand()%6));
 prepare_x();
 double worst[2]={0,0};
 for (int m = 0; m < 2; m++) { FN[m](0, N);
  for (int r = 0; r < N; r++) { double d = 0, mag = 0; for (int g = 0; g < K/32; g++) { double s = _cvtsh_ss(S[(size_t)r*(K/32)+g]); for (int i = 0; i < 32; i++) { double t = s * Q[(size_t)r*K+32*g+i] * X[32*g+i]; d += t; mag += fabs(t);} }
   double e = fabs(OUT[r] - d) / mag; if (e > worst[m]) worst[m] = e; } }
 printf("K %d N %d threads %d: error / Σ|w·x|: AVX2 %.2e, VNNI %.2e\n", K, N, THREADS, worst[0], worst[1]);
 for(int round=0;round<3;round++) for(MODE=0;MODE<3;MODE++){ double best=1e9; for(int t=0;t<5;t++){ pthread_t th[8]; double t0=now(); for(long i=0;i<THREADS;i++)pthread_create(&th[i],0,work,(void*)i); for(int i=0;i<THREADS;i++)pthread_join(th[i],0); double e=(now()-t0)/20; if(e<best)best=e;}
  double bytes=(MODE!=2)? (double)N*K*(1+2.0/32) : (double)N*K*2; printf("round %d %-15s %.3f ms: %.2f G weights/s, %.1f GB/s\n",round,NAME[MODE],best*1e3,(double)N*K/best/1e9,bytes/best/1e9);}
 return 0; }

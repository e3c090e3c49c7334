// gcc -O3 -march=native -pthread bench/c/gemv_amx.c -o /tmp/gemv_amx -lm
// /tmp/gemv_amx [K [THREADS [WEIGHTS [AHEAD]]]]   (384, 2, 10223616 (the benchmark config's
// layers), 0 bytes of prefetch ahead of each tile row); VARIANT=1 drops the C tile's store and
// scaling, VARIANT=2 the scaling (for timing the tiles alone), VARIANT=9 checks the piped kernel.
// The q8_0 decoding GEMV on AMX against the AVX-512 loops, in cache, rows split between
// threads. x stays f32 in effect: each group of 32 is a scale times integers of 24 bits,
// split into three signed bytes (balanced base 256), so that the int8 tile
// product (TDPBSSD, exact in int32) times the scales gives w·x to f32's precision. W is the
// tile's A operand, read in place (16 rows, stride K); x's bytes are B, one column per
// (group, byte); one C tile holds 4 groups × 3 bytes for 16 rows.
#define _GNU_SOURCE
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static int K = 384, N;
static signed char *Q; static unsigned short *S, *B; static float *X; float *OUT;
static signed char *XB;  // [K/64][16 rows][48 bytes]: x's B tiles
static float *XP;        // [K/128][16]: xs_g·256^l for the C tile's 12 columns
static int MODE; static long AHEAD; static int VARIANT;
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}

struct cfg { unsigned char palette, start; unsigned char res[14]; unsigned short colsb[16]; unsigned char rows[16]; };

// x's B tiles and scales: chunk c of 64 k holds groups 2c, 2c+1; in its tile, row kk
// (k = 64c + 4kk … +3) puts group (c%2)*2 + kk/8's three bytes in columns 3·slot + l.
static void prepare_x(void){
  memset(XB, 0, (size_t)K/64*16*48);
  for (int g = 0; g < K/32; g++) {
    float m = 0; for (int i = 0; i < 32; i++) m = fmaxf(m, fabsf(X[32*g+i]));
    float xs = m > 0 ? m / 8355000.0f : 1; // three balanced bytes hold up to 127·65793
    int slot = g % 4; int c = g / 2; int half = g % 2;
    for (int l = 0; l < 3; l++) XP[(g/4)*16 + 3*slot + l] = xs * (float)(1 << (8*(2-l)));
    for (int i = 0; i < 32; i++) {
      int v = (int)lrintf(X[32*g+i] / xs);
      int d3 = (signed char)(v & 255); v = (v - d3) >> 8;
      int d2 = (signed char)(v & 255); v = (v - d2) >> 8;
      int d1 = v; // in [-128, 127]
      int kk = half*8 + i/4, j = i % 4;
      signed char *row = XB + ((size_t)c*16 + kk)*48;
      row[4*(3*slot+0)+j] = d1; row[4*(3*slot+1)+j] = d2; row[4*(3*slot+2)+j] = d3;
    }
  }
  for (int r = 0; r < K/128; r++) for (int l = 12; l < 16; l++) XP[r*16+l] = 0;
}

__attribute__((target("avx512f,avx512bw,avx512vl,amx-tile,amx-int8,f16c")))
static void q8_amx(int a, int b){
  struct cfg c = {0}; c.palette = 1;
  c.colsb[0] = 48; c.rows[0] = 16;  // C: 16 rows × 12 int32
  c.colsb[1] = 64; c.rows[1] = 16;  // A: 16 rows of W × 64 k
  c.colsb[2] = 48; c.rows[2] = 16;  // B: 16 k-quads × 12 columns
  c.colsb[3] = 48; c.rows[3] = 16;
  _tile_loadconfig(&c);
  int G = K/32; int idx[16]; for (int i = 0; i < 16; i++) idx[i] = i < 12 ? i/3 : 0;
  __m512i perm = _mm512_loadu_si512(idx);
  int cbuf[16*16] __attribute__((aligned(64)));
  for (int m0 = a; m0 < b; m0 += 16) {
    __m512 acc[16]; for (int m = 0; m < 16; m++) acc[m] = _mm512_setzero_ps();
    for (int r = 0; r < K/128; r++) {
      if (AHEAD) for (int m = 0; m < 16; m++) { const char *f = (const char*)Q + (size_t)(m0+m)*K + 128*r + AHEAD; _mm_prefetch(f, _MM_HINT_T0); _mm_prefetch(f + 64, _MM_HINT_T0); }
      _tile_zero(0);
      _tile_loadd(1, Q + (size_t)m0*K + 128*r, K);
      _tile_loadd(2, XB + (size_t)(2*r)*16*48, 48);
      _tile_dpbssd(0, 1, 2);
      _tile_loadd(1, Q + (size_t)m0*K + 128*r + 64, K);
      _tile_loadd(3, XB + (size_t)(2*r+1)*16*48, 48);
      _tile_dpbssd(0, 1, 3);
      if (VARIANT == 1) continue;
      _tile_stored(0, cbuf, 64);
      if (VARIANT == 2) continue;
      __m512 p = _mm512_loadu_ps(XP + 16*r);
      for (int m = 0; m < 16; m++) {
        __m128 s4 = _mm_cvtph_ps(_mm_loadl_epi64((const __m128i*)(S + (size_t)(m0+m)*G + 4*r)));
        __m512 v = _mm512_mul_ps(_mm512_permutexvar_ps(perm, _mm512_castps128_ps512(s4)), p);
        acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(cbuf + 16*m)), v, acc[m]);
      }
    }
    for (int m = 0; m < 16; m++) OUT[m0+m] = _mm512_reduce_add_ps(acc[m]);
  }
  _tile_release();
}


// Pipelined: round r's tile products go to C[r%2] while round r−1's C is scaled by the vector units.
__attribute__((target("avx512f,avx512bw,avx512vl,amx-tile,amx-int8,f16c")))
static void q8_amx2(int a, int b){
  struct cfg c = {0}; c.palette = 1;
  for (int t = 0; t < 8; t++) { c.rows[t] = 16; c.colsb[t] = 48; }
  c.colsb[2] = c.colsb[3] = c.colsb[4] = c.colsb[5] = 64;
  _tile_loadconfig(&c);
  int G = K/32, R = K/128; int idx[16]; for (int i = 0; i < 16; i++) idx[i] = i < 12 ? i/3 : 0;
  __m512i perm = _mm512_loadu_si512(idx);
  int cbuf[2][16*16] __attribute__((aligned(64)));
  for (int m0 = a; m0 < b; m0 += 16) {
    __m512 acc[16]; for (int m = 0; m < 16; m++) acc[m] = _mm512_setzero_ps();
    const signed char *w = Q + (size_t)m0*K;
    for (int r = 0; r <= R; r++) {
      if (r < R) {
        if (AHEAD) for (int m = 0; m < 16; m++) { const char *f = (const char*)w + (size_t)m*K + 128*r + AHEAD; _mm_prefetch(f, _MM_HINT_T0); _mm_prefetch(f + 64, _MM_HINT_T0); }
        if (r % 2 == 0) {
          _tile_zero(0);
          _tile_loadd(2, w + 128*r, K); _tile_loadd(6, XB + (size_t)(2*r)*16*48, 48); _tile_dpbssd(0, 2, 6);
          _tile_loadd(3, w + 128*r + 64, K); _tile_loadd(7, XB + (size_t)(2*r+1)*16*48, 48); _tile_dpbssd(0, 3, 7);
          _tile_stored(0, cbuf[0], 64);
        } else {
          _tile_zero(1);
          _tile_loadd(4, w + 128*r, K); _tile_loadd(6, XB + (size_t)(2*r)*16*48, 48); _tile_dpbssd(1, 4, 6);
          _tile_loadd(5, w + 128*r + 64, K); _tile_loadd(7, XB + (size_t)(2*r+1)*16*48, 48); _tile_dpbssd(1, 5, 7);
          _tile_stored(1, cbuf[1], 64);
        }
      }
      if (r > 0) {
        int q = r - 1;
        __m512 p = _mm512_loadu_ps(XP + 16*q);
        for (int m = 0; m < 16; m++) {
          __m128 s4 = _mm_cvtph_ps(_mm_loadl_epi64((const __m128i*)(S + (size_t)(m0+m)*G + 4*q)));
          __m512 v = _mm512_mul_ps(_mm512_permutexvar_ps(perm, _mm512_castps128_ps512(s4)), p);
          acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(cbuf[q%2] + 16*m)), v, acc[m]);
        }
      }
    }
    for (int m = 0; m < 16; m++) OUT[m0+m] = _mm512_reduce_add_ps(acc[m]);
  }
  _tile_release();
}
__attribute__((target("avx512f,avx2,fma,f16c"))) static void q8_512(int a,int b){
 for(int r=a;r<b;r++){ const signed char*q=Q+(size_t)r*K; __m512 acc=_mm512_setzero_ps();
  for(int g=0;g<K/32;g++){ const signed char*p=q+32*g; const float*x=X+32*g;
   __m512 s=_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)p))),_mm512_loadu_ps(x));
   s=_mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)(p+16)))),_mm512_loadu_ps(x+16),s);
   acc=_mm512_fmadd_ps(s,_mm512_cvtph_ps(_mm256_set1_epi16(S[(size_t)r*(K/32)+g])),acc);}
  OUT[r]=_mm512_reduce_add_ps(acc);}}
__attribute__((target("avx512f,avx2,fma,f16c"))) static void bf_512(int a,int b){
 for(int r=a;r<b;r++){ const unsigned short*w=B+(size_t)r*K; __m512 acc[2]={0};
  for(int i=0;i<K;i+=32) for(int j=0;j<2;j++) acc[j]=_mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)(w+i+16*j))),16)),_mm512_loadu_ps(X+i+16*j),acc[j]);
  OUT[r]=_mm512_reduce_add_ps(_mm512_add_ps(acc[0],acc[1]));}}
static void (*FN[4])(int,int)={q8_512,q8_amx,bf_512,q8_amx2};
static const char*NAME[4]={"q8_0 16 lanes","q8_0 AMX","bf16 16 lanes","q8_0 AMX piped"};
static int THREADS = 2;
static void*work(void*t){ long i=(long)t; int a=N*i/THREADS/16*16, b=N*(i+1)/THREADS/16*16; for(int rep=0;rep<20;rep++) FN[MODE](a,b); return 0; }
int main(int argc, char **argv){
 if (argc > 1) K = atoi(argv[1]); if (argc > 2) THREADS = atoi(argv[2]);
 if (getenv("VARIANT")) VARIANT = atoi(getenv("VARIANT"));
 if (argc > 4) AHEAD = atol(argv[4]);
 N = (argc > 3 ? atol(argv[3]) : 10223616) / K / 16 * 16;
 if (syscall(SYS_arch_prctl, 0x1023, 18)) { puts("no AMX permission"); return 1; }
 Q=aligned_alloc(64,(size_t)N*K); S=aligned_alloc(64,(size_t)N*K/32*2); B=aligned_alloc(64,(size_t)N*K*2);
 X=aligned_alloc(64,K*4); OUT=aligned_alloc(64,N*4); XB=aligned_alloc(64,(size_t)K/64*16*48); XP=aligned_alloc(64,K/128*64);
 srand(1); for(size_t i=0;i<(size_t)N*K;i++){Q[i]=rand()%255-127; B[i]=0x3f80|(rand()&0x7f);}
 for(size_t i=0;i<(size_t)N*K/32;i++) S[i]=_cvtss_sh(ldexpf(1.0f + (rand()%1000)/1000.0f, -7 - rand()%3), 0);
 for(int i=0;i<K;i++) X[i]=(rand()%2000-1000)/1000.0f * ldexpf(1.0f, -(rand()%6));
 prepare_x();
 // accuracy of the AMX product against a double formula
 float *ref = malloc(N*4); MODE=0; q8_512(0,N); memcpy(ref, OUT, N*4);
 double worst = 0, worst512 = 0;
 if (VARIANT == 9) q8_amx2(0, N); else q8_amx(0, N);
 for (int r = 0; r < N; r++) { double d = 0, mag = 0; for (int g = 0; g < K/32; g++) { double s = _cvtsh_ss(S[(size_t)r*(K/32)+g]); for (int i = 0; i < 32; i++) { double t = s * Q[(size_t)r*K+32*g+i] * X[32*g+i]; d += t; mag += fabs(t);} }
   double e = fabs(OUT[r] - d) / mag, e2 = fabs(ref[r] - d) / mag; if (e > worst) worst = e; if (e2 > worst512) worst512 = e2; }
 printf("K %d N %d: AMX error / Σ|w·x| %.2e, AVX-512's %.2e\n", K, N, worst, worst512);
 for(int round=0;round<3;round++) for(MODE=0;MODE<4;MODE++){ double best=1e9; for(int t=0;t<5;t++){ pthread_t th[8]; double t0=now(); for(long i=0;i<THREADS;i++)pthread_create(&th[i],0,work,(void*)i); for(int i=0;i<THREADS;i++)pthread_join(th[i],0); double e=(now()-t0)/20; if(e<best)best=e;}
  double bytes=(MODE!=2)? (double)N*K*(1+2.0/32) : (double)N*K*2; printf("round %d %-15s %.3f ms: %.2f G weights/s, %.1f GB/s\n",round,NAME[MODE],best*1e3,(double)N*K/best/1e9,bytes/best/1e9);}
 return 0; }

/* The AVX-512 path of the native paged-attention kernel: included once by paged-attention.c at
 * this point of it (it uses that file's types and helpers), not a header of its own; apart only
 * so each file reads as one thing. Compiled where the build machine has AVX-512 (-march=native). */
/* ---- AVX-512 path ---------------------------------------------------------------------------
 * The generic loops above leave most of the machine idle: each score is a dot product reduced to
 * a scalar on its own, and the weighted sum of V keeps its running output in a stack array.
 * Measured on a 2-vCPU Sapphire Rapids at 32 sequences x 2,048 positions with the pool in cache
 * (so memory is not what limits): 47 ms a decode step's 8 layers for float32, 43 for float16,
 * about 2 multiply-adds a cycle. Here, for head sizes that are a multiple of 16: 16 K rows are
 * transposed once (dimension-major, a position a lane) and every query row of the unit scores
 * all 16 with a multiply-add per dimension, a query value broadcast; V is accumulated in
 * registers for a tile of query rows per pass over the blocks, each V row loaded (and for
 * float16 converted) once per tile. The transposed scoring replaced a lane-sum tree per query
 * row (16 partial products summed across lanes by permutes), whose permutes were repeated for
 * every row: a 5-position verify step (20 query rows a kv head) of the copier at 1,000 past
 * positions took 2.2 ms of attention against 1.0 ms for a decode step; transposed, 1.7 ms (its
 * 8 layers, 2 threads, in the engine). */

/* 16 vectors as the rows of a 16 x 16 matrix, transposed in place (unpacks, then shuffles of
 * pairs, then of 128-bit quarters twice). */
static inline __attribute__((always_inline)) void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; i++) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; i++) {
    r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 4; j++) {
      t[8 * i + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + 4 + j], 0x88);
      t[8 * i + 4 + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + 4 + j], 0xdd);
    }
  for (int j = 0; j < 8; j++) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
  }
}

/* The 16 K rows at k (dim apart), of which `present` exist in memory (16 unless a block is
 * shorter than 16 rows; a row past a sequence's end but inside its block is computed and ignored
 * by the caller's mask), as kt[d] = dimension d of each row, lane r = row r. */
static inline __attribute__((always_inline)) void transpose_keys(const float *restrict k, const int dim, const int present, __m512 *restrict kt) {
  for (int c = 0; c < dim / 16; c++) {
    __m512 r[16];
    for (int p = 0; p < 16; p++) r[p] = p < present ? _mm512_loadu_ps(k + (size_t)p * dim + c * 16) : _mm512_setzero_ps();
    transpose16(r);
    for (int j = 0; j < 16; j++) kt[c * 16 + j] = r[j];
  }
}

/* Lane r of out[t] = query row t (of `n_rows` at q, dim apart) · K row r, from the transposed
 * rows kt: a multiply-add per dimension and row, a query value broadcast against the 16 rows'
 * values. Two partial sums a row (even and odd dimensions) halve each one's chain. Every row's
 * score is computed alone, the same whatever rows share the call. */
static inline __attribute__((always_inline)) void scores_of_rows(const float *restrict q, const __m512 *restrict kt, const int dim, const int n_rows, __m512 out[8]) {
  __m512 even[8], odd[8];
  for (int t = 0; t < n_rows; t++) even[t] = odd[t] = _mm512_setzero_ps();
  for (int d = 0; d < dim; d += 2)
    for (int t = 0; t < n_rows; t++) {
      even[t] = _mm512_fmadd_ps(_mm512_set1_ps(q[(size_t)t * dim + d]), kt[d], even[t]);
      odd[t] = _mm512_fmadd_ps(_mm512_set1_ps(q[(size_t)t * dim + d + 1]), kt[d + 1], odd[t]);
    }
  for (int t = 0; t < n_rows; t++) out[t] = _mm512_add_ps(even[t], odd[t]);
}

#ifdef __AVX512VNNI__
/* Scores of every query row against an int8 K block (its codes in dimension quads, key_code_at):
 * per 16 positions and query row, dim / 4 byte dot products (vpdpbusd: 16 lanes x 4 unsigned K
 * codes times the row's 4 signed codes, summed into 32-bit lanes), exact in integers, then one
 * conversion, the bias's correction and the two scales. Against the block's float32 copy and the
 * lane-sum tree this is a quarter of the instructions. Scores go to s->scores rows from position
 * `p0`. */
#define INT8_KEY_SCORES 1
static inline __attribute__((always_inline)) void int8_key_scores(const Job *job, Scratch *s, const char *block, int p0, int count, int rows, const int dim) {
  const int bs = job->shape.block_size, quads = dim / 4;
  const uint8_t *codes = (const uint8_t *)block;
  const float *scales = block_scales(&job->shape, block);
  for (int g0 = 0; g0 < count; g0 += 16) {
    const int m = count - g0 < 16 ? count - g0 : 16;
    /* Loads stay inside the block's quads (a block shorter than 16 positions, or its tail). */
    const int inside = bs - g0 < 16 ? bs - g0 : 16;
    const __mmask16 readable = (__mmask16)((1u << inside) - 1), wanted = (__mmask16)((1u << m) - 1);
    const __m512 key_scale = _mm512_maskz_loadu_ps(wanted, scales + g0);
    for (int row0 = 0; row0 < rows; row0 += 8) {
      const int tile_rows = rows - row0 < 8 ? rows - row0 : 8;
      /* Two accumulators a row (even and odd quads), so consecutive dot products do not wait on each other. */
      __m512i even[8], odd[8];
      for (int t = 0; t < 8; t++) even[t] = odd[t] = _mm512_setzero_si512();
      for (int c = 0; c < quads; c += 2) {
        const __m512i k0 = _mm512_maskz_loadu_epi32(readable, codes + ((size_t)c * bs + g0) * 4);
        const __m512i k1 = _mm512_maskz_loadu_epi32(readable, codes + ((size_t)(c + 1) * bs + g0) * 4);
        for (int t = 0; t < tile_rows; t++) {
          const int8_t *q = s->query_codes + (size_t)(row0 + t) * dim + (size_t)c * 4;
          int32_t q0, q1;
          memcpy(&q0, q, 4);
          memcpy(&q1, q + 4, 4);
          even[t] = _mm512_dpbusd_epi32(even[t], k0, _mm512_set1_epi32(q0));
          odd[t] = _mm512_dpbusd_epi32(odd[t], k1, _mm512_set1_epi32(q1));
        }
      }
      for (int t = 0; t < tile_rows; t++) {
        const int row = row0 + t;
        const __m512i dot = _mm512_sub_epi32(_mm512_add_epi32(even[t], odd[t]), _mm512_set1_epi32(KEY_CODE_BIAS * s->query_sums[row]));
        const __m512 score = _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(dot), _mm512_set1_ps(s->query_scales[row])), key_scale);
        _mm512_mask_storeu_ps(s->scores + (size_t)row * job->longest + p0 + g0, wanted, score);
      }
    }
  }
}
#endif

/* e^x for 16 lanes, x <= 0 (a score minus its row's maximum): 2^(x log2 e) as a whole power of
 * two (vscalefps) times 2^f, f in [-0.5, 0.5], by the degree-6 Taylor polynomial of e^(f ln 2)
 * (relative error ~1e-7, float32's own). glibc's vector expf is 8 lanes wide here. */
static inline __m512 exp16(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
  const __m512 t = _mm512_mul_ps(x, _mm512_set1_ps(1.44269504f));
  const __m512 whole = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_mul_ps(_mm512_sub_ps(t, whole), _mm512_set1_ps(0.693147181f));
  __m512 p = _mm512_set1_ps(1.0f / 720);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, whole);
}

/* A score row's e^(score − max) over its positions from .. visible − 1, in place, returning 1 / their
 * sum; positions base .. from − 1 (before its sliding window) and visible .. n − 1 (a prefill
 * row's causal edge) weigh 0 in the tile's shared pass over V. */
static inline float exp_row(float *restrict row, int base, int from, int visible, int n) {
  for (int p = base; p < from; p++) row[p] = 0.0f;
  __m512 largest = _mm512_set1_ps(row[from]);
  int p = from;
  for (; p + 16 <= visible; p += 16) largest = _mm512_max_ps(largest, _mm512_loadu_ps(row + p));
  const __mmask16 tail = (__mmask16)((1u << (visible - p)) - 1);
  largest = _mm512_mask_max_ps(largest, tail, largest, _mm512_maskz_loadu_ps(tail, row + p));
  const __m512 max = _mm512_set1_ps(_mm512_reduce_max_ps(largest));
  __m512 sum = _mm512_setzero_ps();
  for (p = from; p + 16 <= visible; p += 16) {
    const __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(row + p), max));
    _mm512_storeu_ps(row + p, e);
    sum = _mm512_add_ps(sum, e);
  }
  const __m512 e = _mm512_maskz_mov_ps(tail, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, row + p), max)));
  _mm512_mask_storeu_ps(row + p, tail, e);
  for (p = visible; p < n; p++) row[p] = 0.0f;
  return 1.0f / _mm512_reduce_add_ps(_mm512_add_ps(sum, e));
}

/* The row's softmax: exp_row, then each weight scaled by 1 / the sum. */
static inline void softmax_row(float *restrict row, int base, int from, int visible, int n) {
  const __m512 inverse = _mm512_set1_ps(exp_row(row, base, from, visible, n));
  for (int p = from; p < visible; p += 16) {
    const __mmask16 lanes = visible - p >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (visible - p)) - 1);
    _mm512_mask_storeu_ps(row + p, lanes, _mm512_mul_ps(inverse, _mm512_maskz_loadu_ps(lanes, row + p)));
  }
}

/* 16 elements of a block from element `at` as float32 (int8 unscaled). */
static inline __m512 load16(const char *block, int type, size_t at) {
  if (type == F32) return _mm512_loadu_ps((const float *)block + at);
  if (type == F16) return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)block + at)));
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)((const int8_t *)block + at))));
}

/* Chunks of 16 dimensions a pass over V covers, and the rows it keeps: 24 accumulators with 4
 * chunks, 8 rows (the switch's most) with fewer. */
#define V_CHUNKS 4
static inline int value_rows_per_pass(int v_chunks) { return 24 / v_chunks < 8 ? 24 / v_chunks : 8; }

/* ---- Head size 8 ------------------------------------------------------------------------------
 * A head of 8 is half a vector, and a unit's work is a few positions' worth of arithmetic per
 * query row, so what costs is how many instructions each position takes and whether they wait on
 * each other. Each chunk of 16 K positions is transposed once (three stages of two-source
 * permutes) into 8 vectors, one a dimension, that every query row of the tile then scores with 8
 * multiply-adds; V's positions are taken two a vector (two V rows of 8 fill one), each row's
 * weights spread to the pair's lanes by one permute, so the running sums are two vectors a row
 * updated a chunk at a time rather than one multiply-add a position that waits on the one before.
 * The softmax leaves its weights unnormalized; each row's sum is scaled once at the end. llama2.c's
 * stories260K, one layer, 1,000-token past, CPU time a call: 28 -> 15 us for one query row, 69 ->
 * 38 us for a 5-row verify step (against a lane-sum tree a row and a multiply-add a position).
 * float32 and float16 pools (an int8 pool keeps the generic path). */

typedef struct {
  __m512i transpose[3][2]; /* stage s: the permute giving the output whose swapped bit is 0 / 1 */
  __m512i pair[8]; /* lanes 0-7 take weight 2j, lanes 8-15 weight 2j + 1 */
} Dim8Tables;

/* Where element (position p of 16, dimension d of 8) sits at each stage of the transpose: before
 * it, register p / 2 lane (p % 2) * 8 + d (two K rows a vector, as they lie in the block); after
 * stage s, the register's bits hold d's top s + 1 bits and p's remaining high bits, the lane the
 * rest; after the last, register d, lane p. */
static void dim8_place(int stage, int p, int d, int *reg, int *lane) {
  const int p3 = p >> 3 & 1, p2 = p >> 2 & 1, p1 = p >> 1 & 1, p0 = p & 1, d2 = d >> 2 & 1, d1 = d >> 1 & 1, d0 = d & 1;
  switch (stage) {
    case -1: *reg = p3 << 2 | p2 << 1 | p1, *lane = p0 << 3 | d2 << 2 | d1 << 1 | d0; return;
    case 0: *reg = d2 << 2 | p2 << 1 | p1, *lane = p0 << 3 | p3 << 2 | d1 << 1 | d0; return;
    case 1: *reg = d2 << 2 | d1 << 1 | p1, *lane = p0 << 3 | p3 << 2 | p2 << 1 | d0; return;
    default: *reg = d, *lane = p; return;
  }
}

static Dim8Tables dim8_computed;

static void compute_dim8_tables(void) {
  Dim8Tables t;
  for (int stage = 0; stage < 3; stage++) {
    const int bit = 2 - stage; /* the register bit this stage swaps */
    for (int value = 0; value < 2; value++) {
      int32_t index[16];
      for (int lane = 0; lane < 16; lane++) {
        /* Find the element that output register (bit = value) holds at `lane`: any register with that bit does, the other bits come along unchanged. */
        for (int p = 0; p < 16; p++)
          for (int d = 0; d < 8; d++) {
            int reg, at;
            dim8_place(stage, p, d, &reg, &at);
            if (at != lane || (reg >> bit & 1) != value || (reg & ~(1 << bit)) != 0) continue;
            int from_reg, from_lane;
            dim8_place(stage - 1, p, d, &from_reg, &from_lane);
            index[lane] = ((from_reg >> bit & 1) ? 16 : 0) + from_lane;
          }
      }
      t.transpose[stage][value] = _mm512_loadu_si512(index);
    }
  }
  for (int j = 0; j < 8; j++) {
    int32_t index[16];
    for (int lane = 0; lane < 16; lane++) index[lane] = 2 * j + (lane >= 8);
    t.pair[j] = _mm512_loadu_si512(index);
  }
  dim8_computed = t;
}

/* The tables, worked out once per process (a search over the 128 elements, too slow for every unit). */
static const Dim8Tables *dim8_tables(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, compute_dim8_tables);
  return &dim8_computed;
}

/* A chunk's `present` K rows of 8 (two a vector, as in the block) as 8 vectors, one a dimension, lane p = row p; absent rows read as 0. */
static inline __attribute__((always_inline)) void transpose16x8(const float *restrict k, const int present, const Dim8Tables *t, __m512 out[8]) {
  __m512 a[8], b[8];
  for (int j = 0; j < 8; j++) {
    const int rows = present - 2 * j >= 2 ? 2 : present - 2 * j > 0 ? 1 : 0;
    a[j] = _mm512_maskz_loadu_ps(rows == 2 ? (__mmask16)0xFFFF : rows == 1 ? (__mmask16)0x00FF : 0, k + (size_t)j * 16);
  }
  /* Stage s pairs the registers that differ in bit 2 - s; the pair's outputs keep the pair's places. */
  for (int stage = 0; stage < 3; stage++) {
    const int bit = 1 << (2 - stage);
    __m512 *from = stage == 1 ? b : a, *to = stage == 1 ? a : b;
    for (int r = 0; r < 8; r++) {
      if (r & bit) continue;
      to[r] = _mm512_permutex2var_ps(from[r], t->transpose[stage][0], from[r | bit]);
      to[r | bit] = _mm512_permutex2var_ps(from[r], t->transpose[stage][1], from[r | bit]);
    }
  }
  for (int d = 0; d < 8; d++) out[d] = b[d];
}

static void attend_unit8(const Job *job, const Unit *u, Scratch *s, const int groups) {
  const Shape *sh = &job->shape;
  const int dim = 8, bs = sh->block_size;
  const int start = job->starts[u->seq], past = job->pasts[u->seq];
  const int first_position = past + u->first;
  const int n = first_position + u->count;
  const int rows = u->count * groups;
  const int32_t *table = job->tables + (size_t)u->seq * sh->max_blocks;
  const char *key_head = pool_head(sh, job->key_pool, u->head), *value_head = pool_head(sh, job->value_pool, u->head);
  const Dim8Tables *tables = dim8_tables();

  load_queries(job, u, s, dim, groups);

  const int blocks = (n + bs - 1) / bs;
  const int first_block = window_start(sh, first_position) / bs, base = first_block * bs;
  for (int i = first_block; i < blocks; i++) {
    const int count = n - i * bs < bs ? n - i * bs : bs;
    if (i + AHEAD < blocks) {
      const char *ahead = block_start(sh, key_head, table[i + AHEAD]);
      for (int r = 0; r < count; r++) prefetch_row(sh, ahead, r);
    }
    const float *k = block_rows(sh, block_start(sh, key_head, table[i]), count, dim, 1, s->block);
    for (int g0 = 0; g0 < count; g0 += 16) {
      const int m = count - g0 < 16 ? count - g0 : 16;
      const int p0 = i * bs + g0;
      __m512 kt[8];
      transpose16x8(k + (size_t)g0 * dim, m, tables, kt);
      for (int row = 0; row < rows; row++) {
        if (first_position + row / groups < p0 || p0 + m <= window_start(sh, first_position + row / groups)) continue;
        const float *q = s->queries + (size_t)row * dim;
        __m512 even = _mm512_mul_ps(_mm512_set1_ps(q[0]), kt[0]), odd = _mm512_mul_ps(_mm512_set1_ps(q[1]), kt[1]);
        for (int d = 2; d < 8; d += 2) {
          even = _mm512_fmadd_ps(_mm512_set1_ps(q[d]), kt[d], even);
          odd = _mm512_fmadd_ps(_mm512_set1_ps(q[d + 1]), kt[d + 1], odd);
        }
        _mm512_mask_storeu_ps(s->scores + (size_t)row * job->longest + p0, (__mmask16)((1u << m) - 1), _mm512_add_ps(even, odd));
      }
    }
  }
  /* Unnormalized: each row's output is divided by its sum at the end rather than every weight. */
  float inverse[rows];
  for (int row = 0; row < rows; row++) inverse[row] = exp_row(s->scores + (size_t)row * job->longest, base, window_start(sh, first_position + row / groups), first_position + row / groups + 1, n);
  /* Each row's running sum: 16 floats, the even positions' in lanes 0-7, the odd ones' in 8-15. */
  memset(s->acc, 0, sizeof(float) * 16 * (size_t)rows);
  for (int i = first_block; i < blocks; i++) {
    const int count = n - i * bs < bs ? n - i * bs : bs;
    if (i + AHEAD < blocks) {
      const char *ahead = block_start(sh, value_head, table[i + AHEAD]);
      for (int r = 0; r < count; r++) prefetch_row(sh, ahead, r);
    }
    const float *v = block_rows(sh, block_start(sh, value_head, table[i]), count, dim, 0, s->block);
    for (int g0 = 0; g0 < count; g0 += 16) {
      const int m = count - g0 < 16 ? count - g0 : 16;
      const int p0 = i * bs + g0;
      /* All 8 pairs whatever m is (absent rows read as 0), so the loops below have no branches. */
      __m512 vv[8];
      for (int j = 0; j < 8; j++) vv[j] = _mm512_maskz_loadu_ps(m - 2 * j >= 2 ? (__mmask16)0xFFFF : m - 2 * j == 1 ? (__mmask16)0x00FF : 0, v + (size_t)(g0 + 2 * j) * dim);
      for (int row = 0; row < rows; row++) {
        const int visible = first_position + row / groups + 1;
        if (p0 >= visible || p0 + m <= window_start(sh, visible - 1)) continue;
        const __m512 w = _mm512_maskz_loadu_ps((__mmask16)((1u << m) - 1), s->scores + (size_t)row * job->longest + p0);
        float *sum = s->acc + (size_t)row * 16;
        __m512 first = _mm512_loadu_ps(sum), second = _mm512_setzero_ps();
        for (int j = 0; j < 8; j += 2) {
          first = _mm512_fmadd_ps(_mm512_permutexvar_ps(tables->pair[j], w), vv[j], first);
          second = _mm512_fmadd_ps(_mm512_permutexvar_ps(tables->pair[j + 1], w), vv[j + 1], second);
        }
        _mm512_storeu_ps(sum, _mm512_add_ps(first, second));
      }
    }
  }
  for (int row = 0; row < rows; row++) {
    const __m512 sum = _mm512_loadu_ps(s->acc + (size_t)row * 16);
    float o[8];
    _mm256_storeu_ps(o, _mm256_mul_ps(_mm256_set1_ps(inverse[row]), _mm256_add_ps(_mm512_castps512_ps256(sum), _mm512_extractf32x8_ps(sum, 1))));
    store_row(job->out, sh->act_type, ((size_t)(start + u->first + row / groups) * sh->heads + (size_t)u->head * groups + row % groups) * dim, dim, o);
  }
}

/* A pass over V: the weighted sums of `tile_rows` query rows (from row0) in `v_chunks` chunks of 16
 * dimensions (from chunk c0), into their rows of s->acc. Inlined for each constant row count, so
 * the accumulators (rows x chunks, at most 32 - V_CHUNKS of them) stay in registers while each V
 * row's chunks are loaded once for all the pass's rows. Passes over a whole head of 128 (8
 * chunks) kept 2 rows each; over half of it, 6 rows: a V load per 6 multiply-adds rather than
 * per 2, and a 5-token verify step's 20 rows (4 query heads a kv head) read 4 heads' worth of V
 * rather than 10. Measured on the copier's shape (8 layers, 1,000 past, 2 threads, interleaved):
 * 5 rows 1.08 -> 0.96 ms, 8 rows 1.58 -> 1.32 ms, 1 row alike. Positions are summed in order, as
 * at any tiling, so a row's output does not depend on the rows beside it. */
static inline __attribute__((always_inline)) void value_pass(const Job *job, Scratch *s, const char *value_head, const int32_t *table, const int dim, const int groups, const int first_position, const int row0,
                                                             const int tile_rows, const int c0, const int v_chunks) {
  const Shape *sh = &job->shape;
  const int bs = sh->block_size;
  /* The tile's first position any row sees is its first row's window start (0 without a window); its last, the last row's. */
  const int seen = first_position + (row0 + tile_rows - 1) / groups + 1;
  __m512 acc[8][V_CHUNKS];
  for (int t = 0; t < tile_rows; t++)
    for (int c = 0; c < v_chunks; c++) acc[t][c] = _mm512_setzero_ps();
  const float *weights = s->scores + (size_t)row0 * job->longest;
  const int tile_blocks = (seen + bs - 1) / bs;
  for (int i = window_start(sh, first_position + row0 / groups) / bs; i < tile_blocks; i++) {
    const int count = seen - i * bs < bs ? seen - i * bs : bs;
    const char *block = block_start(sh, value_head, table[i]);
    /* The first pass brings the rows in; the others find them in cache (a head's V at 1,000 positions is 0.5 MB). */
    if (c0 == 0 && row0 == 0 && i + AHEAD < tile_blocks) {
      const char *ahead = block_start(sh, value_head, table[i + AHEAD]);
      for (int r = 0; r < count; r++) prefetch_row(sh, ahead, r);
    }
    for (int r = 0; r < count; r++) {
      const int p = i * bs + r;
      __m512 v[V_CHUNKS];
      /* int8 codes unscaled: their row's scale is in the weights (attend_unit16). */
      for (int c = 0; c < v_chunks; c++) v[c] = load16(block, sh->kv_type, (size_t)r * dim + (size_t)(c0 + c) * 16);
      for (int t = 0; t < tile_rows; t++) {
        const __m512 w = _mm512_set1_ps(weights[(size_t)t * job->longest + p]);
        for (int c = 0; c < v_chunks; c++) acc[t][c] = _mm512_fmadd_ps(w, v[c], acc[t][c]);
      }
    }
  }
  for (int t = 0; t < tile_rows; t++)
    for (int c = 0; c < v_chunks; c++) _mm512_storeu_ps(s->acc + (size_t)(row0 + t) * dim + (size_t)(c0 + c) * 16, acc[t][c]);
}

static inline __attribute__((always_inline)) void attend_unit16(const Job *job, const Unit *u, Scratch *s, const int dim, const int groups) {
  const Shape *sh = &job->shape;
  const int bs = sh->block_size, chunks = dim / 16;
  const int start = job->starts[u->seq], past = job->pasts[u->seq];
  const int first_position = past + u->first;
  const int n = first_position + u->count;
  const int rows = u->count * groups;
  const int32_t *table = job->tables + (size_t)u->seq * sh->max_blocks;
  const char *key_head = pool_head(sh, job->key_pool, u->head), *value_head = pool_head(sh, job->value_pool, u->head);

  load_queries(job, u, s, dim, groups);

  const int blocks = (n + bs - 1) / bs;
  /* A sliding window's blocks wholly before the tile's first query's window are never read. */
  const int first_block = window_start(sh, first_position) / bs, base = first_block * bs;
  for (int i = first_block; i < blocks; i++) {
    const int count = n - i * bs < bs ? n - i * bs : bs;
    const char *key_block = block_start(sh, key_head, table[i]);
    if (i + AHEAD < blocks) {
      const char *ahead = block_start(sh, key_head, table[i + AHEAD]);
      /* An int8 K block's positions are not whole rows of its bytes (quads): all of it. */
      for (int r = 0, rows_ahead = sh->kv_type == I8 ? bs : count; r < rows_ahead; r++) prefetch_row(sh, ahead, r);
    }
#ifdef INT8_KEY_SCORES
    if (sh->kv_type == I8) {
      int8_key_scores(job, s, key_block, i * bs, count, rows, dim);
      continue;
    }
#endif
    const float *k = block_rows(sh, key_block, count, dim, 1, s->block);
    for (int g0 = 0; g0 < count; g0 += 16) {
      const int m = count - g0 < 16 ? count - g0 : 16;
      const int p0 = i * bs + g0;
      __m512 kt[dim];
      transpose_keys(k + (size_t)g0 * dim, dim, g0 + 16 <= bs ? 16 : m, kt);
      for (int row0 = 0; row0 < rows; row0 += 8) {
        const int n_rows = rows - row0 < 8 ? rows - row0 : 8;
        __m512 scores[8];
        switch (n_rows) {
#define SCORE_ROWS(k) \
  case k: scores_of_rows(s->queries + (size_t)row0 * dim, kt, dim, k, scores); break;
          SCORE_ROWS(1) SCORE_ROWS(2) SCORE_ROWS(3) SCORE_ROWS(4) SCORE_ROWS(5) SCORE_ROWS(6) SCORE_ROWS(7) SCORE_ROWS(8)
#undef SCORE_ROWS
        }
        for (int t = 0; t < n_rows; t++) {
          const int row = row0 + t;
          /* Rows of a prefill tile that see none of these positions are skipped (causal, and before the row's window). */
          if (first_position + row / groups < p0 || p0 + m <= window_start(sh, first_position + row / groups)) continue;
          _mm512_mask_storeu_ps(s->scores + (size_t)row * job->longest + p0, (__mmask16)((1u << m) - 1), scores[t]);
        }
      }
    }
  }
  for (int row = 0; row < rows; row++) softmax_row(s->scores + (size_t)row * job->longest, base, window_start(sh, first_position + row / groups), first_position + row / groups + 1, n);
  if (sh->kv_type == I8) {
    /* An int8 V row's scale goes into its weights here, 16 at a time, rather than into each
     * weight as the pass over V broadcasts it (a multiply on the pass's critical port). */
    for (int i = first_block; i < blocks; i++) {
      const int count = n - i * bs < bs ? n - i * bs : bs;
      const float *scales = block_scales(sh, block_start(sh, value_head, table[i]));
      for (int row = 0; row < rows; row++) {
        float *restrict w = s->scores + (size_t)row * job->longest + (size_t)i * bs;
        for (int r = 0; r < count; r++) w[r] *= scales[r];
      }
    }
  }
  /* Passes over V: up to V_CHUNKS chunks of 16 dimensions for up to value_rows_per_pass rows each. */
  const int v_chunks = chunks < V_CHUNKS ? chunks : V_CHUNKS, per_pass = value_rows_per_pass(v_chunks);
  for (int c0 = 0; c0 < chunks; c0 += v_chunks) {
    for (int row0 = 0; row0 < rows; row0 += per_pass) {
      const int tile_rows = rows - row0 < per_pass ? rows - row0 : per_pass;
      switch (tile_rows) {
#define VALUE_ROWS(k) \
  case k: value_pass(job, s, value_head, table, dim, groups, first_position, row0, k, c0, v_chunks); break;
        VALUE_ROWS(1) VALUE_ROWS(2) VALUE_ROWS(3) VALUE_ROWS(4) VALUE_ROWS(5) VALUE_ROWS(6) VALUE_ROWS(7) VALUE_ROWS(8)
#undef VALUE_ROWS
      }
    }
  }
  for (int row = 0; row < rows; row++)
    store_row(job->out, sh->act_type, ((size_t)(start + u->first + row / groups) * sh->heads + (size_t)u->head * groups + row % groups) * dim, dim, s->acc + (size_t)row * dim);
}

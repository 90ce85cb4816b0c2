/* The AVX-512 path of the native paged-attention kernel: included once by paged-attention.c at
 * this point of it (it uses that file's types and helpers), not a header of its own; apart only
 * so each file reads as one thing. Compiled where the build machine has AVX-512 (-march=native). */
/* ---- AVX-512 path ---------------------------------------------------------------------------
 * The generic loops above leave most of the machine idle: each score is a dot product reduced to
 * a scalar on its own, and the weighted sum of V keeps its running output in a stack array.
 * Measured on a 2-vCPU Sapphire Rapids at 32 sequences x 2,048 positions with the pool in cache
 * (so memory is not what limits): 47 ms a decode step's 8 layers for float32, 43 for float16,
 * about 2 multiply-adds a cycle. Here, for head sizes that are a multiple of 16: a query row's
 * partial products with 16 K rows stay 16 vector registers and are summed across lanes all at
 * once (a tree of two-source permutes, 30 permutes for 16 scores instead of 16 separate
 * reductions), and V is accumulated in registers for a tile of query rows per pass over the
 * blocks, each V row loaded (and for float16 converted) once per tile. */

/* The permutes of the lane-sum tree: level l combines vectors holding 16 >> l lanes per source
 * into ones holding half that, sources of the first operand first. */
typedef struct {
  __m512i low[4], high[4];
} LaneTree;

static LaneTree lane_tree(void) {
  LaneTree tree;
  for (int level = 0; level < 4; level++) {
    const int width = 16 >> level, half = width / 2;
    int32_t low[16], high[16];
    for (int o = 0; o < 16; o++) {
      const int from_second = o >= 8, source = (o % 8) / half, lane = (o % 8) % half;
      low[o] = (from_second ? 16 : 0) + source * width + lane;
      high[o] = low[o] + half;
    }
    tree.low[level] = _mm512_loadu_si512(low);
    tree.high[level] = _mm512_loadu_si512(high);
  }
  return tree;
}

/* Lane r of the result = the sum of p[r]'s 16 lanes (p is overwritten). */
static inline __attribute__((always_inline)) __m512 sum_lanes(__m512 p[16], const LaneTree *tree) {
  for (int level = 0, n = 16; n > 1; level++, n /= 2)
    for (int i = 0; i < n / 2; i++)
      p[i] = _mm512_add_ps(_mm512_permutex2var_ps(p[2 * i], tree->low[level], p[2 * i + 1]), _mm512_permutex2var_ps(p[2 * i], tree->high[level], p[2 * i + 1]));
  return p[0];
}

/* Lane r = q · k[r] for the 16 rows at k (dim apart), of which `present` exist in memory (16 unless
 * a block is shorter than 16 rows; a row past a sequence's end but inside its block is computed
 * and ignored by the caller's mask). Fully unrolled: with a loop left over r, GCC kept the 16
 * partial products on the stack. */
static inline __attribute__((always_inline)) __m512 scores16(const float *restrict q, const float *restrict k, const int dim, const int present, const LaneTree *tree) {
  const int chunks = dim / 16;
  __m512 qv[16], p[16];
  for (int c = 0; c < chunks; c++) qv[c] = _mm512_loadu_ps(q + c * 16);
  if (present == 16) {
#pragma GCC unroll 16
    for (int r = 0; r < 16; r++) {
      __m512 acc = _mm512_mul_ps(qv[0], _mm512_loadu_ps(k + (size_t)r * dim));
      for (int c = 1; c < chunks; c++) acc = _mm512_fmadd_ps(qv[c], _mm512_loadu_ps(k + (size_t)r * dim + c * 16), acc);
      p[r] = acc;
    }
  } else {
    for (int r = 0; r < 16; r++) {
      __m512 acc = _mm512_setzero_ps();
      if (r < present)
        for (int c = 0; c < chunks; c++) acc = _mm512_fmadd_ps(qv[c], _mm512_loadu_ps(k + (size_t)r * dim + c * 16), acc);
      p[r] = acc;
    }
  }
  return sum_lanes(p, tree);
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

/* A score row's softmax over its positions from .. visible − 1, in place; positions base .. from − 1
 * (before its sliding window) and visible .. n − 1 (a prefill row's causal edge) weigh 0 in the
 * tile's shared pass over V. */
static inline void softmax_row(float *restrict row, int base, int from, int visible, int n) {
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
  const __m512 inverse = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(_mm512_add_ps(sum, e)));
  for (p = from; p < visible; p += 16) {
    const __mmask16 lanes = visible - p >= 16 ? (__mmask16)0xFFFF : tail;
    _mm512_mask_storeu_ps(row + p, lanes, _mm512_mul_ps(inverse, _mm512_maskz_loadu_ps(lanes, row + p)));
  }
  for (p = visible; p < n; p++) row[p] = 0.0f;
}

/* 16 elements of a block from element `at` as float32 (int8 unscaled). */
static inline __m512 load16(const char *block, int type, size_t at) {
  if (type == F32) return _mm512_loadu_ps((const float *)block + at);
  if (type == F16) return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)block + at)));
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)((const int8_t *)block + at))));
}

/* ---- Head size 8 ------------------------------------------------------------------------------
 * A head of 8 is half a vector: the generic loops scored it one position at a time (a scalar
 * expf, an 8-long dot product reduced alone, ~8 ns a score), so a verify step of 5 query rows
 * over a 1,000-token past cost 3x a decode step's attention on llama2.c's stories260K. Here two
 * K rows fill one vector, so 16 positions are 8 products and the last three levels of the
 * lane-sum tree (the first level's work is done by the layout); V rows are accumulated 8 wide,
 * a tile of up to 16 query rows per pass. float32 and float16 pools (an int8 pool keeps the
 * generic path). */

/* Lane r = q · k[r] for the 16 rows of 8 at k, `present` of them in memory. */
static inline __attribute__((always_inline)) __m512 scores16_dim8(const float *restrict q, const float *restrict k, const int present, const LaneTree *tree) {
  const __m512 qq = _mm512_broadcast_f32x8(_mm256_loadu_ps(q));
  __m512 p[8];
  for (int j = 0; j < 8; j++) {
    const int rows = present - 2 * j >= 2 ? 2 : present - 2 * j > 0 ? 1 : 0;
    const __mmask16 lanes = rows == 2 ? (__mmask16)0xFFFF : rows == 1 ? (__mmask16)0x00FF : 0;
    p[j] = _mm512_mul_ps(qq, _mm512_maskz_loadu_ps(lanes, k + (size_t)j * 16));
  }
  for (int level = 1, n = 8; n > 1; level++, n /= 2)
    for (int i = 0; i < n / 2; i++)
      p[i] = _mm512_add_ps(_mm512_permutex2var_ps(p[2 * i], tree->low[level], p[2 * i + 1]), _mm512_permutex2var_ps(p[2 * i], tree->high[level], p[2 * i + 1]));
  return p[0];
}

static inline __m256 load8(const char *block, int type, size_t at) {
  if (type == F32) return _mm256_loadu_ps((const float *)block + at);
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)block + at)));
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
  const LaneTree tree = lane_tree();

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
      for (int row = 0; row < rows; row++) {
        if (first_position + row / groups < p0 || p0 + m <= window_start(sh, first_position + row / groups)) continue;
        const __m512 scores = scores16_dim8(s->queries + (size_t)row * dim, k + (size_t)g0 * dim, m, &tree);
        _mm512_mask_storeu_ps(s->scores + (size_t)row * job->longest + p0, (__mmask16)((1u << m) - 1), scores);
      }
    }
  }
  for (int row = 0; row < rows; row++) softmax_row(s->scores + (size_t)row * job->longest, base, window_start(sh, first_position + row / groups), first_position + row / groups + 1, n);
  for (int row0 = 0; row0 < rows; row0 += 16) {
    const int tile_rows = rows - row0 < 16 ? rows - row0 : 16;
    const int seen = first_position + (row0 + tile_rows - 1) / groups + 1;
    __m256 acc[16];
    for (int a = 0; a < 16; a++) acc[a] = _mm256_setzero_ps();
    const int tile_blocks = (seen + bs - 1) / bs;
    for (int i = window_start(sh, first_position + row0 / groups) / bs; i < tile_blocks; i++) {
      const int count = seen - i * bs < bs ? seen - i * bs : bs;
      const char *block = block_start(sh, value_head, table[i]);
      if (i + AHEAD < tile_blocks) {
        const char *ahead = block_start(sh, value_head, table[i + AHEAD]);
        for (int r = 0; r < count; r++) prefetch_row(sh, ahead, r);
      }
      for (int r = 0; r < count; r++) {
        const int p = i * bs + r;
        const __m256 v = load8(block, sh->kv_type, (size_t)r * dim);
        for (int t = 0; t < tile_rows; t++) acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(s->scores[(size_t)(row0 + t) * job->longest + p]), v, acc[t]);
      }
    }
    for (int t = 0; t < tile_rows; t++) {
      const int row = row0 + t;
      float o[8];
      _mm256_storeu_ps(o, acc[t]);
      store_row(job->out, sh->act_type, ((size_t)(start + u->first + row / groups) * sh->heads + (size_t)u->head * groups + row % groups) * dim, dim, o);
    }
  }
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
  const LaneTree tree = lane_tree();

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
      const float *kg = k + (size_t)g0 * dim;
      const int p0 = i * bs + g0;
      for (int row = 0; row < rows; row++) {
        /* Rows of a prefill tile that see none of these positions are skipped (causal, and before the row's window). */
        if (first_position + row / groups < p0 || p0 + m <= window_start(sh, first_position + row / groups)) continue;
        const __m512 scores = scores16(s->queries + (size_t)row * dim, kg, dim, g0 + 16 <= bs ? 16 : m, &tree);
        _mm512_mask_storeu_ps(s->scores + (size_t)row * job->longest + p0, (__mmask16)((1u << m) - 1), scores);
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
  /* Query rows per pass over V: as many as keep their outputs in 16 registers. */
  const int tile = chunks <= 16 ? 16 / chunks : 1;
  for (int row0 = 0; row0 < rows; row0 += tile) {
    const int tile_rows = rows - row0 < tile ? rows - row0 : tile;
    /* The tile's first position any row sees is its first row's window start (0 without a window); its last, the last row's. */
    const int seen = first_position + (row0 + tile_rows - 1) / groups + 1;
    __m512 acc[16];
    for (int a = 0; a < 16; a++) acc[a] = _mm512_setzero_ps();
    const int tile_blocks = (seen + bs - 1) / bs;
    for (int i = window_start(sh, first_position + row0 / groups) / bs; i < tile_blocks; i++) {
      const int count = seen - i * bs < bs ? seen - i * bs : bs;
      const char *block = block_start(sh, value_head, table[i]);
      if (i + AHEAD < tile_blocks) {
        const char *ahead = block_start(sh, value_head, table[i + AHEAD]);
        for (int r = 0; r < count; r++) prefetch_row(sh, ahead, r);
      }
      for (int r = 0; r < count; r++) {
        const int p = i * bs + r;
        __m512 v[16];
        /* int8 codes unscaled: their row's scale is in the weights (above). */
        for (int c = 0; c < chunks; c++) v[c] = load16(block, sh->kv_type, (size_t)r * dim + c * 16);
        for (int t = 0; t < tile_rows; t++) {
          const __m512 w = _mm512_set1_ps(s->scores[(size_t)(row0 + t) * job->longest + p]);
          for (int c = 0; c < chunks; c++) acc[t * chunks + c] = _mm512_fmadd_ps(w, v[c], acc[t * chunks + c]);
        }
      }
    }
    for (int t = 0; t < tile_rows; t++) {
      const int row = row0 + t;
      float o[dim];
      for (int c = 0; c < chunks; c++) _mm512_storeu_ps(o + c * 16, acc[t * chunks + c]);
      store_row(job->out, sh->act_type, ((size_t)(start + u->first + row / groups) * sh->heads + (size_t)u->head * groups + row % groups) * dim, dim, o);
    }
  }
}

/* The dense decoder layer's operations at a few rows (src/runners/native-layers.ts): a linear over
 * weights packed once into column panels, RMSNorm (with the residual add), RoPE, the gated MLP's
 * activation. Included by paged-attention.c, which registers them; portable C with GCC's vector
 * extensions, which -march=native lowers to the machine's widest registers. Its linears run on
 * the module's kept threads (work-pool.h).
 *
 * Why: at 1-8 rows a decode or verify step is bound by reading the weights once. ONNX Runtime's
 * fp32 MatMul (MLAS) reads a packed weight panel and computes it at a few rows without overlapping
 * the two: measured on the copier's shapes, 1 -> 5 rows took a segmented step from 12.0 to
 * 16.0-17.2 ms. Here each panel row of 64 columns is loaded once and multiplied into every row's
 * accumulators, held in registers: the 8 layers' linears (116 M weights) took 9.1 ms at one row
 * and 9.9 ms at five in a standalone interleaved measurement (docs/architecture.md, "Native
 * layers", has the step-level figures). */


#define PANEL 64         /* columns a panel holds: four 16-float vectors */
#define LINEAR_ROWS 8    /* rows whose accumulators stay in registers (8 x 4 vectors) */
/* Panel rows (of 256 bytes) ahead that a step of several rows prefetches: 4 KiB, a page. At several
 * rows each panel row carries 2-8x the multiply-adds it does at one, so fewer of its loads are in
 * flight at once and the hardware prefetcher, which stops at each 4 KiB page, no longer keeps
 * ahead. Measured on the copier's 8-layer linears (standalone, interleaved, with the weights on
 * huge pages): 5 rows 10.66 -> 8.85 ms and 8 rows 13.15 -> 9.35 ms against 7.66 ms at one row; 8
 * or 48 rows ahead did no better. */
#define PREFETCH_ROWS 16

typedef float v16 __attribute__((vector_size(64), aligned(64)));

/* A linear's weight [in, out] packed for linear_rows: panel p holds columns p*64 .. p*64+63 of
 * every input row, contiguous ([in][64]); columns past `out` are zeros. */
typedef struct {
  int in, out, panels;
  float *data;
} Packed;

static size_t packed_bytes(int in, int out) { return sizeof(float) * (size_t)in * PANEL * ((out + PANEL - 1) / PANEL); }

/* Packs w [in, out] into to; with `transposed` w is given as its transpose [out, in] (an
 * lm_head's table, [vocab, hidden]): element (k, c) at w[k * out + c], or w[c * in + k]. One panel
 * (in x 64 floats) is written at a time, so a transposed table's strided reads touch 64 of its
 * rows at once and the panel's writes stay in cache. */
static void pack_weight(const float *restrict w, int in, int out, int transposed, float *restrict to) {
  const size_t k_step = transposed ? 1 : (size_t)out, c_step = transposed ? (size_t)in : 1;
  const int panels = (out + PANEL - 1) / PANEL;
  for (int p = 0; p < panels; p++) {
    float *panel = to + (size_t)p * in * PANEL;
    const int first = p * PANEL, count = out - first < PANEL ? out - first : PANEL;
    for (int k = 0; k < in; k++) {
      float *row = panel + (size_t)k * PANEL;
      const float *from = w + k * k_step + (size_t)first * c_step;
      if (c_step == 1) memcpy(row, from, sizeof(float) * count);
      else
        for (int c = 0; c < count; c++) row[c] = from[(size_t)c * c_step];
      memset(row + count, 0, sizeof(float) * (PANEL - count));
    }
  }
}

/* out[t, :] = column ids[t] of the packed weight ([in] values each): a token's embedding row where
 * the weight was packed from an embedding table's transpose (pack_weight, transposed), so one
 * packed copy serves both the lm_head and the lookup of a tied embedding. */
static void gather_columns(const Packed *w, const int64_t *restrict ids, int count, float *restrict out) {
  for (int t = 0; t < count; t++) {
    const float *panel = w->data + (size_t)(ids[t] / PANEL) * w->in * PANEL;
    const int c = (int)(ids[t] % PANEL);
    for (int k = 0; k < w->in; k++) out[(size_t)t * w->in + k] = panel[(size_t)k * PANEL + c];
  }
}

/* y[r, panel columns] for rows first .. first+count-1 (count <= LINEAR_ROWS) and panels p0 .. p1-1.
 * Inlined for each constant count (linear_panels), so the accumulators stay in registers: with a
 * run-time count they lived on the stack, a load and a store per multiply-add. */
static inline __attribute__((always_inline)) void linear_panels_of(const Packed *w, const float *restrict x, float *restrict y, int first, const int count, int p0, int p1) {
  const int in = w->in;
  for (int p = p0; p < p1; p++) {
    v16 acc[LINEAR_ROWS][4];
    for (int r = 0; r < count; r++) acc[r][0] = acc[r][1] = acc[r][2] = acc[r][3] = (v16){0};
    const float *panel = w->data + (size_t)p * in * PANEL;
    for (int k = 0; k < in; k++) {
      const float *row = panel + (size_t)k * PANEL;
      if (count > 1)
        for (int c = 0; c < PANEL; c += 16) __builtin_prefetch(row + PREFETCH_ROWS * PANEL + c, 0, 3);
      const v16 b0 = *(const v16 *)row, b1 = *(const v16 *)(row + 16), b2 = *(const v16 *)(row + 32), b3 = *(const v16 *)(row + 48);
      for (int r = 0; r < count; r++) {
        const float a = x[(size_t)(first + r) * in + k];
        acc[r][0] += a * b0, acc[r][1] += a * b1, acc[r][2] += a * b2, acc[r][3] += a * b3;
      }
    }
    const int column = p * PANEL, width = w->out - column < PANEL ? w->out - column : PANEL;
    for (int r = 0; r < count; r++) memcpy(y + (size_t)(first + r) * w->out + column, acc[r], sizeof(float) * width);
  }
}

static void linear_panels(const Packed *w, const float *restrict x, float *restrict y, int first, int count, int p0, int p1) {
  switch (count) {
#define ROWS(n) \
  case n: linear_panels_of(w, x, y, first, n, p0, p1); break;
    ROWS(1) ROWS(2) ROWS(3) ROWS(4) ROWS(5) ROWS(6) ROWS(7) ROWS(8)
#undef ROWS
  }
}

/* The same for one row (a decode step of one sequence), two panels at a time: two sequential
 * streams per thread read the weights faster at one row (the copier's 8 layers: 9.1 against 9.9
 * ms, interleaved), where at five rows the 40 accumulators of two panels spill (11.4 ms). No
 * software prefetch here: with its few multiply-adds a panel row's loads run far enough ahead
 * (prefetching made no difference at one row). Same sums in the same order as linear_panels. */
static void linear_one_row(const Packed *w, const float *restrict x, float *restrict y, int row, int p0, int p1) {
  const int in = w->in;
  const float *xs = x + (size_t)row * in;
  int p = p0;
  for (; p + 1 < p1; p += 2) {
    v16 acc[8];
    memset(acc, 0, sizeof acc);
    const float *first_panel = w->data + (size_t)p * in * PANEL, *second_panel = first_panel + (size_t)in * PANEL;
    for (int k = 0; k < in; k++) {
      const v16 *a_row = (const v16 *)(first_panel + (size_t)k * PANEL), *b_row = (const v16 *)(second_panel + (size_t)k * PANEL);
      for (int c = 0; c < 4; c++) acc[c] += xs[k] * a_row[c], acc[4 + c] += xs[k] * b_row[c];
    }
    for (int half = 0; half < 2; half++) {
      const int column = (p + half) * PANEL, width = w->out - column < PANEL ? w->out - column : PANEL;
      memcpy(y + (size_t)row * w->out + column, &acc[4 * half], sizeof(float) * width);
    }
  }
  if (p < p1) linear_panels(w, x, y, row, 1, p, p1);
}

/* Part `part` of `parts` of a linear: a contiguous run of panels, every row. */
typedef struct {
  const Packed *w;
  const float *x;
  float *y;
  int rows, parts;
} LinearJob;

static void linear_part(void *arg, int part, KeptScratch *scratch) {
  (void)scratch;
  const LinearJob *job = arg;
  const int panels = job->w->panels, p0 = (int)((long)panels * part / job->parts), p1 = (int)((long)panels * (part + 1) / job->parts);
  for (int first = 0; first < job->rows; first += LINEAR_ROWS) {
    const int count = job->rows - first < LINEAR_ROWS ? job->rows - first : LINEAR_ROWS;
    if (count == 1) linear_one_row(job->w, job->x, job->y, first, p0, p1);
    else linear_panels(job->w, job->x, job->y, first, count, p0, p1);
  }
}

static void run_linear(WorkPool *pool, const Packed *w, const float *x, float *y, int rows, int threads) {
  int parts = pool ? pool_parts(pool, threads) : 1;
  if (parts > w->panels) parts = w->panels;
  LinearJob job = {w, x, y, rows, parts};
  if (parts <= 1) linear_part(&job, 0, NULL);
  else pool_run(pool, linear_part, &job, parts, NULL);
}

/* ---- the elementwise operations (one thread: at a few rows they take microseconds) ---------- */

/* out = x / sqrt(mean(x^2) + eps) * weight, per row of `width`. */
static void rms_norm_rows(const float *restrict x, int rows, int width, const float *restrict weight, float eps, float *restrict out) {
  for (int r = 0; r < rows; r++) {
    const float *row = x + (size_t)r * width;
    float sum = 0;
    for (int i = 0; i < width; i++) sum += row[i] * row[i];
    const float scale = 1.0f / sqrtf(sum / width + eps);
    for (int i = 0; i < width; i++) out[(size_t)r * width + i] = row[i] * scale * weight[i];
  }
}

/* RoPE, Hugging Face's rotate-half pairs (i, i + rotary/2) of each head's first `rotary`
 * dimensions, in place; the angle is rounded to float32 as the graph computes it
 * (kernels/rotary-embedding.ts), cos and sin are multiplied by `factor`. */
static void rope_rows(float *restrict x, int tokens, int heads, int dim, const int64_t *restrict positions, const float *restrict inverse, int half, float factor) {
  for (int t = 0; t < tokens; t++) {
    const float position = (float)positions[t];
    for (int i = 0; i < half; i++) {
      const float angle = position * inverse[i], c = cosf(angle) * factor, s = sinf(angle) * factor;
      for (int h = 0; h < heads; h++) {
        float *head = x + ((size_t)t * heads + h) * dim;
        const float a = head[i], b = head[i + half];
        head[i] = a * c - b * s;
        head[i + half] = b * c + a * s;
      }
    }
  }
}

enum { SILU = 0, GELU_TANH = 1 };

/* gate[i] = act(gate[i]) * up[i]. */
static void gated_rows(float *restrict gate, const float *restrict up, size_t count, int kind) {
  if (kind == SILU) {
    for (size_t i = 0; i < count; i++) gate[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
  } else {
    const float k = 0.7978845608028654f; /* sqrt(2 / pi) */
    for (size_t i = 0; i < count; i++) {
      const float g = gate[i];
      gate[i] = 0.5f * g * (1.0f + tanhf(k * (g + 0.044715f * g * g * g))) * up[i];
    }
  }
}

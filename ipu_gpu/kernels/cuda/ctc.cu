// CTC loss on the GPU: the twin of kernels/ctc_cpu.py's exact log-space path, launched by
// kernels/ctc_gpu.py. PopLibs' arithmetic: float32 partials, log-zero is the finite
// sentinel -65504 (an infeasible alignment gives a large finite loss), logadd(a, b) =
// max + log1p(exp(min - max)), and the logits gradient is
//   grad[t, c] = softmax[t, c] - exp(log-zero + loss) - sum over s with ext[s] == c of
//                exp(alpha[t, s] + beta[t, s] - lp[t, c] + loss)
// (the log-zero term is the start of PopLibs' log-sum; it is 0 unless the alignment is
// infeasible). Data is time-major [T, B, C]; ext is the extended label
// [blank, l1, blank, ..., lL, blank] of length S = 2L + 1.
//
// Kernels, launched in this order on one stream:
//   ipu_ctc_check_i32       flags lengths out of range / labels outside [0, C) (no message:
//                           the host rebuilds it from copies only when the flag is set).
//   ipu_ctc_rows_f32        one block per (t, b) row (grid-stride): log-sum-exp of the
//                           logits and, for the gradient, the softmax (or exp of the
//                           log-probabilities) into grad; 0 at t >= data_length[b].
//   ipu_ctc_alpha_beta_f32  one block per batch entry (blockIdx.y: 0 alpha, 1 beta),
//                           threads over the extended positions, one __syncthreads per
//                           step; the current and previous rows in shared memory when they
//                           fit, the full tables in a global workspace when the gradient
//                           is wanted. The alpha block writes the loss and, for the
//                           gradient, per-position links to the next position of the same
//                           class (and whether a position is its class's first).
//   ipu_ctc_grad_f32        one block per (t, b) row (grid-stride): occupancies, then one
//                           thread per distinct class of the row walks that class's
//                           positions in ascending order and subtracts them: no atomics,
//                           a fixed summation order, so the result is deterministic.
// Bounds rule: the launches never index with an unchecked value. An entry whose
// data_length is outside [0, T], label_length outside [0, Lmax] or a label outside [0, C)
// (the host's ipu_ctc_check_i32 pass normally rejects these first) gets a NaN loss and NaN
// gradient rows: the alpha/beta blocks check their entry and stop, the alpha block marks it
// with links[0] = -2 (valid links are >= -1), and the gradient kernel fills its rows.
// No headers (NVRTC), no warp intrinsics (tests/cuda_emulator runs this on the CPU).

#ifndef IPU_SHARED_DYNAMIC
#define IPU_SHARED_DYNAMIC(type, name) extern __shared__ type name[]
#endif

#define IPU_CTC_LOG_ZERO (-65504.0f)
// links[0] of an entry with out-of-range lengths or labels (the bounds rule above)
#define IPU_CTC_BAD_ENTRY (-2)
// extended positions per thread whose next-step log-probability is loaded one step early
#define IPU_CTC_PREFETCH 4
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)  // nvcc, NVRTC; not the emulator's g++
#define IPU_CTC_UNROLL _Pragma("unroll")
#else
#define IPU_CTC_UNROLL
#endif

__device__ __forceinline__ float ipu_ctc_logadd2(float a, float b) {
  if (a < b) {
    float t = a;
    a = b;
    b = t;
  }
  return a + log1pf(expf(b - a));
}

__device__ __forceinline__ float ipu_ctc_logadd3(float a, float b, float c) {
  float bc = c > b ? c : b;  // Python's max(a, max(b, c)), as ctc_cpu
  float m = bc > a ? bc : a;
  return m + logf(expf(a - m) + expf(b - m) + expf(c - m));
}

// class of extended position s (lab: this entry's labels)
__device__ __forceinline__ int ipu_ctc_ext(const int* lab, int blank, int s) {
  return (s & 1) ? lab[s >> 1] : blank;
}

// whether s - 2 -> s is an allowed transition
__device__ __forceinline__ bool ipu_ctc_skip(const int* lab, int s) {
  return s >= 3 && (s & 1) && lab[s >> 1] != lab[(s >> 1) - 1];
}

// log-probability of class c at row (t, b): data - lse for logits, data as is otherwise
__device__ __forceinline__ float ipu_ctc_lp(const float* data, const float* lse, int logits,
                                            long long row, int n_c, int c) {
  float x = data[row * n_c + c];
  return logits ? x - lse[row] : x;
}

extern "C" __global__ void ipu_ctc_check_i32(const int* labels, const int* label_length,
                                             const int* data_length, int n_b, int max_label,
                                             int max_time, int n_c, int* bad) {
  for (long long b = blockIdx.x * (long long)blockDim.x + threadIdx.x; b < n_b;
       b += (long long)blockDim.x * gridDim.x) {
    int n_t = data_length[b];
    int n_lab = label_length[b];
    if (n_t < 0 || n_t > max_time || n_lab < 0 || n_lab > max_label) {
      atomicExch(bad, 1);
      continue;
    }
    for (int i = 0; i < n_lab; ++i) {
      int v = labels[b * max_label + i];
      if (v < 0 || v >= n_c) {
        atomicExch(bad, 1);
        break;
      }
    }
  }
}

// blockDim.x: a power of two, at most 256
extern "C" __global__ void ipu_ctc_rows_f32(const float* data, const int* data_length, int n_t,
                                            int n_b, int n_c, int logits, int want_grad,
                                            float* lse, float* grad) {
  __shared__ float red[256];
  const int tid = threadIdx.x;
  const int nth = blockDim.x;
  const long long n_rows = (long long)n_t * n_b;
  for (long long r = blockIdx.x; r < n_rows; r += gridDim.x) {
    const int t = (int)(r / n_b);
    const int b = (int)(r % n_b);
    const float* x = data + r * n_c;
    float* g = grad + r * n_c;
    if (t >= data_length[b]) {  // padded step: gradient 0, no log-sum-exp needed
      if (want_grad)
        for (int c = tid; c < n_c; c += nth) g[c] = 0.0f;
      continue;
    }
    if (!logits) {  // log-probabilities: exp of the data (only launched for the gradient)
      for (int c = tid; c < n_c; c += nth) g[c] = expf(x[c]);
      continue;
    }
    float m = __int_as_float(0xff800000);  // -inf; NaN propagates as in numpy's max
    for (int c = tid; c < n_c; c += nth) {
      float v = x[c];
      if (v > m || v != v) m = v;
    }
    red[tid] = m;
    __syncthreads();
    for (int h = nth / 2; h > 0; h /= 2) {
      if (tid < h) {
        float v = red[tid + h];
        if (v > red[tid] || v != v) red[tid] = v;
      }
      __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float sum = 0.0f;
    for (int c = tid; c < n_c; c += nth) sum += expf(x[c] - m);
    red[tid] = sum;
    __syncthreads();
    for (int h = nth / 2; h > 0; h /= 2) {
      if (tid < h) red[tid] += red[tid + h];
      __syncthreads();
    }
    const float tot = red[0];
    __syncthreads();  // red is reused by the next row
    if (tid == 0) lse[r] = m + logf(tot);
    if (want_grad) {
      const float inv = 1.0f / tot;
      for (int c = tid; c < n_c; c += nth) g[c] = expf(x[c] - m) * inv;
    }
  }
}

// Links for the gradient kernel: nxt[s] the next position of ext[s]'s class (-1: none),
// lead[s] 1 if s is the first position of its class.
__device__ void ipu_ctc_links(const int* lab, int n_lab, int blank, int* nxt, int* lead) {
  const int n_s = 2 * n_lab + 1;
  for (int s = threadIdx.x; s < n_s; s += blockDim.x) {
    const int i = s >> 1;
    int next = -1;
    int first = 0;
    if (s & 1) {
      const int c = lab[i];
      if (c == blank) {  // a label equal to the blank belongs to the blank's chain
        next = s + 1;
      } else {
        first = 1;
        for (int j = 0; j < i && first; ++j) first = lab[j] != c;
        for (int j = i + 1; j < n_lab; ++j)
          if (lab[j] == c) {
            next = 2 * j + 1;
            break;
          }
      }
    } else {
      first = s == 0;
      if (i < n_lab && lab[i] == blank)
        next = s + 1;
      else if (s + 2 < n_s)
        next = s + 2;
    }
    nxt[s] = next;
    lead[s] = first;
  }
}

// grid (B, 1) for the loss alone, (B, 2) with beta; dynamic shared memory 2 * S_max floats
// when use_shared. ws (alpha or beta) holds [B, T, S_max] when keep, else [B, 2, S_max]
// (only read when not use_shared). links [B, 2, S_max] when keep.
extern "C" __global__ void ipu_ctc_alpha_beta_f32(
    const float* data, const float* lse, const int* labels, const int* label_length,
    const int* data_length, int t_max, int n_b, int n_c, int max_label, int blank, int logits,
    int keep, int use_shared, float* alpha, float* beta, int* links, float* loss) {
  IPU_SHARED_DYNAMIC(float, sh);
  const int b = blockIdx.x;
  const bool is_beta = blockIdx.y == 1;
  const int tid = threadIdx.x;
  const int nth = blockDim.x;
  const int s_max = 2 * max_label + 1;
  const int n_t = data_length[b];
  const int n_lab = label_length[b];
  const int n_s = 2 * n_lab + 1;
  const int* lab = labels + (long long)b * max_label;
  // the bounds rule (see the top): nothing below runs for an entry with a bad length or label
  __shared__ int bad_label;
  if (tid == 0) bad_label = 0;
  __syncthreads();
  const bool bad_length = n_t < 0 || n_t > t_max || n_lab < 0 || n_lab > max_label;
  if (!bad_length)
    for (int i = tid; i < n_lab; i += nth)
      if (lab[i] < 0 || lab[i] >= n_c) atomicExch(&bad_label, 1);
  __syncthreads();
  if (bad_length || bad_label) {
    if (!is_beta && tid == 0) {
      loss[b] = __int_as_float(0x7fc00000);  // NaN
      if (keep) links[2LL * b * s_max] = IPU_CTC_BAD_ENTRY;
    }
    return;
  }
  if (keep && !is_beta)
    ipu_ctc_links(lab, n_lab, blank, links + 2LL * b * s_max, links + (2LL * b + 1) * s_max);
  if (n_t == 0) {  // no time steps: log-one for the empty label, log-zero otherwise
    if (!is_beta && tid == 0) loss[b] = n_lab == 0 ? 0.0f : -IPU_CTC_LOG_ZERO;
    return;
  }
  float* ws = (is_beta ? beta : alpha) + (long long)b * (keep ? t_max : 2) * s_max;
  // the row of step t the recursion works in, and where it is kept (or null)
#define IPU_CTC_WORK(t) \
  (use_shared ? sh + ((t) & 1) * s_max : ws + (long long)(keep ? (t) : ((t) & 1)) * s_max)
#define IPU_CTC_STORE(t) (use_shared && keep ? ws + (long long)(t) * s_max : (float*)0)

  // per-thread constants of its first IPU_CTC_PREFETCH positions; lpn: the log-probability
  // of the next step, loaded one step ahead so its latency hides behind this step
  int ext[IPU_CTC_PREFETCH];
  bool sk[IPU_CTC_PREFETCH];  // alpha: skip(s); beta: skip(s + 2)
  float lpn[IPU_CTC_PREFETCH];
  const int t0 = is_beta ? n_t - 1 : 0;
  const int step = is_beta ? -1 : 1;
  const long long row0 = (long long)t0 * n_b + b;
  {
    float* cur = IPU_CTC_WORK(t0);
    float* st = IPU_CTC_STORE(t0);
    for (int s = tid; s < n_s; s += nth) {
      const int c = ipu_ctc_ext(lab, blank, s);
      const bool start = is_beta ? s >= n_s - 2 : s < 2;
      const float v = start ? ipu_ctc_lp(data, lse, logits, row0, n_c, c) : IPU_CTC_LOG_ZERO;
      cur[s] = v;
      if (st) st[s] = v;
    }
  }
IPU_CTC_UNROLL
  for (int k = 0; k < IPU_CTC_PREFETCH; ++k) {
    const int s = tid + k * nth;
    ext[k] = 0;
    sk[k] = false;
    lpn[k] = 0.0f;
    if (s < n_s) {
      ext[k] = ipu_ctc_ext(lab, blank, s);
      sk[k] = is_beta ? s + 2 < n_s && ipu_ctc_skip(lab, s + 2) : ipu_ctc_skip(lab, s);
      if (n_t > 1)
        lpn[k] = ipu_ctc_lp(data, lse, logits, (long long)(t0 + step) * n_b + b, n_c, ext[k]);
    }
  }
  __syncthreads();

  if (!is_beta) {
    for (int t = 1; t < n_t; ++t) {
      const float* prev = IPU_CTC_WORK(t - 1);
      float* cur = IPU_CTC_WORK(t);
      float* st = IPU_CTC_STORE(t);
      const long long next_row = (long long)(t + 1) * n_b + b;
IPU_CTC_UNROLL
      for (int k = 0; k < IPU_CTC_PREFETCH; ++k) {
        const int s = tid + k * nth;
        if (s < n_s) {
          const float lp = lpn[k];
          if (t + 1 < n_t) lpn[k] = ipu_ctc_lp(data, lse, logits, next_row, n_c, ext[k]);
          float r;
          if (s == 0)
            r = prev[0];
          else if (sk[k])
            r = ipu_ctc_logadd3(prev[s], prev[s - 1], prev[s - 2]);
          else
            r = ipu_ctc_logadd2(prev[s], prev[s - 1]);
          cur[s] = r + lp;
          if (st) st[s] = r + lp;
        }
      }
      for (int s = tid + IPU_CTC_PREFETCH * nth; s < n_s; s += nth) {
        const float lp = ipu_ctc_lp(data, lse, logits, (long long)t * n_b + b, n_c,
                                    ipu_ctc_ext(lab, blank, s));
        float r;
        if (ipu_ctc_skip(lab, s))
          r = ipu_ctc_logadd3(prev[s], prev[s - 1], prev[s - 2]);
        else
          r = ipu_ctc_logadd2(prev[s], prev[s - 1]);
        cur[s] = r + lp;
        if (st) st[s] = r + lp;
      }
      __syncthreads();
    }
    if (tid == 0) {
      const float* last = IPU_CTC_WORK(n_t - 1);
      float ll = last[n_s - 1];
      if (n_s > 1) ll = ipu_ctc_logadd2(ll, last[n_s - 2]);
      loss[b] = -ll;
    }
  } else {
    // beta[t - 1] from beta[t]; beta includes the emission at its own step
    for (int t = n_t - 1; t >= 1; --t) {
      const float* nb = IPU_CTC_WORK(t);
      float* cur = IPU_CTC_WORK(t - 1);
      float* st = IPU_CTC_STORE(t - 1);
      const long long next_row = (long long)(t - 2) * n_b + b;
IPU_CTC_UNROLL
      for (int k = 0; k < IPU_CTC_PREFETCH; ++k) {
        const int s = tid + k * nth;
        if (s < n_s) {
          const float lp = lpn[k];
          if (t >= 2) lpn[k] = ipu_ctc_lp(data, lse, logits, next_row, n_c, ext[k]);
          float r;
          if (s == n_s - 1)
            r = nb[s];
          else if (sk[k])
            r = ipu_ctc_logadd3(nb[s], nb[s + 1], nb[s + 2]);
          else
            r = ipu_ctc_logadd2(nb[s], nb[s + 1]);
          cur[s] = r + lp;
          if (st) st[s] = r + lp;
        }
      }
      for (int s = tid + IPU_CTC_PREFETCH * nth; s < n_s; s += nth) {
        const float lp = ipu_ctc_lp(data, lse, logits, (long long)(t - 1) * n_b + b, n_c,
                                    ipu_ctc_ext(lab, blank, s));
        float r;
        if (s == n_s - 1)
          r = nb[s];
        else if (s + 2 < n_s && ipu_ctc_skip(lab, s + 2))
          r = ipu_ctc_logadd3(nb[s], nb[s + 1], nb[s + 2]);
        else
          r = ipu_ctc_logadd2(nb[s], nb[s + 1]);
        cur[s] = r + lp;
        if (st) st[s] = r + lp;
      }
      __syncthreads();
    }
  }
#undef IPU_CTC_WORK
#undef IPU_CTC_STORE
}

// grid-stride over the (t, b) rows; dynamic shared memory S_max floats when use_shared
// (else the occupancies overwrite the row's beta in place). grad already holds the softmax
// (ipu_ctc_rows_f32); alpha, beta, links and loss come from ipu_ctc_alpha_beta_f32.
extern "C" __global__ void ipu_ctc_grad_f32(
    const float* data, const float* lse, const int* labels, const int* label_length,
    const int* data_length, int t_max, int n_b, int n_c, int max_label, int blank, int logits,
    int use_shared, const float* alpha, float* beta, const int* links, const float* loss,
    float* grad) {
  IPU_SHARED_DYNAMIC(float, sh);
  const int tid = threadIdx.x;
  const int nth = blockDim.x;
  const int s_max = 2 * max_label + 1;
  const long long n_rows = (long long)t_max * n_b;
  for (long long r = blockIdx.x; r < n_rows; r += gridDim.x) {
    const int t = (int)(r / n_b);
    const int b = (int)(r % n_b);
    const int* nxt = links + 2LL * b * s_max;
    float* g = grad + r * n_c;
    if (nxt[0] == IPU_CTC_BAD_ENTRY) {  // the bounds rule: NaN rows, the same for all threads
      for (int c = tid; c < n_c; c += nth) g[c] = __int_as_float(0x7fc00000);
      continue;
    }
    if (t >= data_length[b]) continue;  // the rows kernel wrote 0 there
    const int n_s = 2 * label_length[b] + 1;
    const int* lab = labels + (long long)b * max_label;
    const int* lead = nxt + s_max;
    const float nll = loss[b];
    const float base = expf(nll + IPU_CTC_LOG_ZERO);  // the log-zero start: 0 unless infeasible
    if (base != 0.0f) {
      for (int c = tid; c < n_c; c += nth) g[c] -= base;
      __syncthreads();
    }
    const long long off = ((long long)b * t_max + t) * s_max;
    const float* a = alpha + off;
    float* be = beta + off;
    float* occ = use_shared ? sh : be;
    for (int s = tid; s < n_s; s += nth) {
      const float lp = ipu_ctc_lp(data, lse, logits, r, n_c, ipu_ctc_ext(lab, blank, s));
      occ[s] = expf(a[s] + be[s] - lp + nll);
    }
    __syncthreads();
    for (int s = tid; s < n_s; s += nth) {
      if (lead[s]) {
        float* gc = g + ipu_ctc_ext(lab, blank, s);
        float v = *gc;
        for (int k = s; k >= 0; k = nxt[k]) v -= occ[k];
        *gc = v;
      }
    }
    __syncthreads();  // occ is reused by the next row
  }
}

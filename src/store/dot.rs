//! The dot product of a question's vector with a stored vector, as half-precision floats
//! or as 8-bit codes: the inner loops of the held table's scan ([`super::flat`]). Pure.
//!
//! The portable form converts the row to single precision (the `half` crate, which uses
//! the F16C instructions where the processor has them) and sums eight products side by
//! side. On x86-64 processors with AVX2, FMA and F16C (checked once, at run time: the
//! release build targets baseline x86-64) one loop converts eight halves and adds their
//! products to four running sums in the same instructions, without a row-sized copy:
//! the scan's cost per row falls to about a third. Codes (`i8`) meet a question's bytes
//! (`u8`) in integer arithmetic, 32 pairs a step (AVX2's `maddubs`), exactly.

use half::f16;
use half::slice::HalfFloatSliceExt;

/// A dot product kernel for this processor, chosen once.
#[derive(Debug, Clone, Copy)]
pub struct DotKernel {
    /// Whether the AVX2 + FMA + F16C loop may run.
    wide: bool,
}

impl DotKernel {
    /// The fastest kernel this processor runs.
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        let wide = std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("f16c");
        #[cfg(not(target_arch = "x86_64"))]
        let wide = false;
        Self { wide }
    }

    /// The portable kernel, whatever the processor.
    pub fn portable() -> Self {
        Self { wide: false }
    }

    /// `query · row` for equally long slices; `scratch` (as long) holds the converted row
    /// where the portable kernel runs.
    pub fn dot(self, query: &[f32], row: &[f16], scratch: &mut [f32]) -> f32 {
        debug_assert_eq!(query.len(), row.len());
        #[cfg(target_arch = "x86_64")]
        if self.wide {
            // SAFETY: `wide` is only set where the processor reports AVX2, FMA and F16C.
            return unsafe { x86::dot(query, row) };
        }
        row.convert_to_f32_slice(scratch);
        dot(query, scratch)
    }

    /// `bytes · codes` for equally long slices, exactly: the bytes at most
    /// [`MAX_BYTE`] (so that two products and their sum fit in 16 bits, as the wide loop
    /// adds them), the codes within ±127. The caller bounds the bytes once per question
    /// (they meet every row): checking them here, per row, took most of a dev build's scan.
    pub fn dot_bytes(self, bytes: &[u8], codes: &[i8]) -> i32 {
        debug_assert_eq!(bytes.len(), codes.len());
        #[cfg(target_arch = "x86_64")]
        if self.wide {
            // SAFETY: `wide` is only set where the processor reports AVX2, FMA and F16C.
            return unsafe { x86::dot_bytes(bytes, codes) };
        }
        bytes
            .iter()
            .zip(codes)
            .map(|(&b, &c)| i32::from(b) * i32::from(c))
            .sum()
    }
}

/// The largest byte [`DotKernel::dot_bytes`] takes: 127 × 127 × 2 fits in an `i16`.
pub const MAX_BYTE: u8 = 127;

/// The dot product of two equally long slices (eight sums side by side, which compilers
/// turn into vector instructions).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut sums = [0.0f32; 8];
    let (a8, a_rest) = a.as_chunks::<8>();
    let (b8, b_rest) = b.as_chunks::<8>();
    for (x, y) in a8.iter().zip(b8) {
        for i in 0..8 {
            sums[i] += x[i] * y[i];
        }
    }
    let tail: f32 = a_rest.iter().zip(b_rest).map(|(x, y)| x * y).sum();
    sums.iter().sum::<f32>() + tail
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use half::f16;
    use std::arch::x86_64::{
        __m128i, __m256, __m256i, _mm_loadu_si128, _mm256_add_epi32, _mm256_add_ps,
        _mm256_cvtph_ps, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_loadu_si256, _mm256_madd_epi16,
        _mm256_maddubs_epi16, _mm256_set1_epi16, _mm256_setzero_ps, _mm256_setzero_si256,
        _mm256_storeu_ps, _mm256_storeu_si256,
    };

    /// `query · row` with AVX2, FMA and F16C: 32 elements a step in four running sums,
    /// then eight at a time, then one by one.
    ///
    /// # Safety
    /// The processor must have AVX2, FMA and F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn dot(query: &[f32], row: &[f16]) -> f32 {
        let n = query.len().min(row.len());
        let (q, h) = (query.as_ptr(), row.as_ptr().cast::<__m128i>());
        let mut sums = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        // SAFETY (every load below): `i + 8 <= n` before each eight-wide load from
        // offset `i`, both slices hold at least `n` elements, and the loads are unaligned
        // ones (an f16 is two bytes: eight of them are one 128-bit load).
        while i + 32 <= n {
            for (k, sum) in sums.iter_mut().enumerate() {
                let at = i + 8 * k;
                let (x, y) = unsafe {
                    (
                        _mm256_loadu_ps(q.add(at)),
                        _mm256_cvtph_ps(_mm_loadu_si128(h.byte_add(2 * at))),
                    )
                };
                *sum = _mm256_fmadd_ps(x, y, *sum);
            }
            i += 32;
        }
        while i + 8 <= n {
            let (x, y) = unsafe {
                (
                    _mm256_loadu_ps(q.add(i)),
                    _mm256_cvtph_ps(_mm_loadu_si128(h.byte_add(2 * i))),
                )
            };
            sums[0] = _mm256_fmadd_ps(x, y, sums[0]);
            i += 8;
        }
        let tail: f32 = query[i..n]
            .iter()
            .zip(&row[i..n])
            .map(|(a, b)| a * b.to_f32())
            .sum();
        total(sums) + tail
    }

    /// `bytes · codes` with AVX2: 32 pairs a step, multiplied and added in pairs to
    /// sixteen 16-bit sums (`maddubs`: exact for bytes ≤ 127 and codes within ±127),
    /// widened and added to eight 32-bit ones.
    ///
    /// # Safety
    /// The processor must have AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn dot_bytes(bytes: &[u8], codes: &[i8]) -> i32 {
        let n = bytes.len().min(codes.len());
        let (b, c) = (bytes.as_ptr(), codes.as_ptr());
        let ones = _mm256_set1_epi16(1);
        let mut sums = _mm256_setzero_si256();
        let mut i = 0;
        while i + 32 <= n {
            // SAFETY: `i + 32 <= n` and both slices hold at least `n` elements; the loads
            // are unaligned ones.
            let (x, y) = unsafe {
                (
                    _mm256_loadu_si256(b.add(i).cast::<__m256i>()),
                    _mm256_loadu_si256(c.add(i).cast::<__m256i>()),
                )
            };
            let pairs = _mm256_maddubs_epi16(x, y);
            sums = _mm256_add_epi32(sums, _mm256_madd_epi16(pairs, ones));
            i += 32;
        }
        let mut lanes = [0i32; 8];
        // SAFETY: `lanes` holds eight 32-bit integers.
        unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast::<__m256i>(), sums) };
        let tail: i32 = bytes[i..n]
            .iter()
            .zip(&codes[i..n])
            .map(|(&x, &y)| i32::from(x) * i32::from(y))
            .sum();
        lanes.iter().sum::<i32>() + tail
    }

    /// The sum of four running sums' lanes.
    #[inline]
    #[target_feature(enable = "avx")]
    fn total(sums: [__m256; 4]) -> f32 {
        let all = _mm256_add_ps(
            _mm256_add_ps(sums[0], sums[1]),
            _mm256_add_ps(sums[2], sums[3]),
        );
        let mut lanes = [0.0f32; 8];
        // SAFETY: `lanes` holds eight floats.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), all) };
        lanes.iter().sum::<f32>()
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// `n` deterministic values in [-1, 1) (other tests of the store's scan use them too).
    pub(in crate::store) fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                (state % 20_000) as f32 / 10_000.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn every_kernel_agrees_with_the_plain_sum_at_every_length_and_extreme() {
        let kernels = [DotKernel::detect(), DotKernel::portable()];
        for n in [0, 1, 7, 8, 9, 31, 32, 33, 40, 256, 384, 385, 768] {
            let query = values(n, n as u32);
            let row: Vec<f16> = values(n, 7 + n as u32)
                .into_iter()
                .map(f16::from_f32)
                .collect();
            let plain: f32 = query.iter().zip(&row).map(|(a, b)| a * b.to_f32()).sum();
            // The extremes included: bytes up to MAX_BYTE, codes from -127 to 127.
            let codes: Vec<i8> = values(n, 11 + n as u32)
                .into_iter()
                .enumerate()
                .map(|(i, x)| match i % 5 {
                    0 if x < 0.0 => -127,
                    0 => 127,
                    _ => (x * 127.0) as i8,
                })
                .collect();
            let bytes: Vec<u8> = values(n, 13 + n as u32)
                .into_iter()
                .enumerate()
                .map(|(i, x)| match i % 3 {
                    0 => MAX_BYTE,
                    _ => (x.abs() * 127.0) as u8,
                })
                .collect();
            let plain_codes: i32 = bytes
                .iter()
                .zip(&codes)
                .map(|(&a, &b)| i32::from(a) * i32::from(b))
                .sum();
            let mut scratch = vec![0.0; n];
            for kernel in kernels {
                let got = kernel.dot(&query, &row, &mut scratch);
                assert!(
                    (got - plain).abs() <= 1e-4 * (1.0 + plain.abs()),
                    "{kernel:?} at {n}: {got} against {plain}"
                );
                let got = kernel.dot_bytes(&bytes, &codes);
                assert_eq!(got, plain_codes, "{kernel:?}, codes at {n}");
            }
        }
    }
}

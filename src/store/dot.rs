//! The dot product of a question's vector with a stored vector, as half-precision floats
//! or as 8-bit codes: the inner loops of the held table's scan ([`super::flat`]). Pure.
//!
//! The portable form converts the row to single precision (the `half` crate, which uses
//! the F16C instructions where the processor has them) and sums eight products side by
//! side. On x86-64 processors with AVX2, FMA and F16C (checked once, at run time: the
//! release build targets baseline x86-64) one loop converts eight halves and adds their
//! products to four running sums in the same instructions, without a row-sized copy:
//! the scan's cost per row falls to about a third. Codes (`i8`) are widened to single
//! precision the same way, eight at a time (AVX2 and FMA).

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

    /// `query · codes` for equally long slices (each code taken as the number it is).
    pub fn dot_codes(self, query: &[f32], codes: &[i8]) -> f32 {
        debug_assert_eq!(query.len(), codes.len());
        #[cfg(target_arch = "x86_64")]
        if self.wide {
            // SAFETY: `wide` is only set where the processor reports AVX2, FMA and F16C.
            return unsafe { x86::dot_codes(query, codes) };
        }
        let mut sums = [0.0f32; 8];
        let (a8, a_rest) = query.as_chunks::<8>();
        let (b8, b_rest) = codes.as_chunks::<8>();
        for (x, y) in a8.iter().zip(b8) {
            for i in 0..8 {
                sums[i] += x[i] * f32::from(y[i]);
            }
        }
        let tail: f32 = a_rest
            .iter()
            .zip(b_rest)
            .map(|(x, &y)| x * f32::from(y))
            .sum();
        sums.iter().sum::<f32>() + tail
    }
}

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
        __m128i, __m256, _mm_loadl_epi64, _mm_loadu_si128, _mm256_add_ps, _mm256_cvtepi8_epi32,
        _mm256_cvtepi32_ps, _mm256_cvtph_ps, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_setzero_ps,
        _mm256_storeu_ps,
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

    /// `query · codes` with AVX2 and FMA, as [`dot`] does with halves.
    ///
    /// # Safety
    /// The processor must have AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot_codes(query: &[f32], codes: &[i8]) -> f32 {
        let n = query.len().min(codes.len());
        let (q, c) = (query.as_ptr(), codes.as_ptr());
        let mut sums = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        // SAFETY (every load below): `i + 8 <= n` before each eight-wide load from
        // offset `i`, both slices hold at least `n` elements, and the loads are unaligned
        // ones (eight codes are one 64-bit load).
        while i + 32 <= n {
            for (k, sum) in sums.iter_mut().enumerate() {
                let at = i + 8 * k;
                let (x, y) = unsafe { (_mm256_loadu_ps(q.add(at)), widen(c.add(at))) };
                *sum = _mm256_fmadd_ps(x, y, *sum);
            }
            i += 32;
        }
        while i + 8 <= n {
            let (x, y) = unsafe { (_mm256_loadu_ps(q.add(i)), widen(c.add(i))) };
            sums[0] = _mm256_fmadd_ps(x, y, sums[0]);
            i += 8;
        }
        let tail: f32 = query[i..n]
            .iter()
            .zip(&codes[i..n])
            .map(|(a, &b)| a * f32::from(b))
            .sum();
        total(sums) + tail
    }

    /// The eight codes at `at` as single-precision floats.
    ///
    /// # Safety
    /// Eight codes must be readable at `at`; the processor must have AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn widen(at: *const i8) -> __m256 {
        // SAFETY: as the caller promises; the load is an unaligned one.
        let eight = unsafe { _mm_loadl_epi64(at.cast::<__m128i>()) };
        _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(eight))
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
mod tests {
    use super::*;

    /// Deterministic values in [-1, 1).
    fn values(n: usize, seed: u32) -> Vec<f32> {
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
    fn every_kernel_agrees_with_the_plain_sum_at_every_length() {
        let kernels = [DotKernel::detect(), DotKernel::portable()];
        for n in [0, 1, 7, 8, 9, 31, 32, 33, 40, 256, 384, 385, 768] {
            let query = values(n, n as u32);
            let row: Vec<f16> = values(n, 7 + n as u32)
                .into_iter()
                .map(f16::from_f32)
                .collect();
            let plain: f32 = query.iter().zip(&row).map(|(a, b)| a * b.to_f32()).sum();
            let codes: Vec<i8> = values(n, 11 + n as u32)
                .into_iter()
                .map(|x| (x * 127.0) as i8)
                .collect();
            let plain_codes: f32 = query
                .iter()
                .zip(&codes)
                .map(|(a, &b)| a * f32::from(b))
                .sum();
            let mut scratch = vec![0.0; n];
            for kernel in kernels {
                let got = kernel.dot(&query, &row, &mut scratch);
                assert!(
                    (got - plain).abs() <= 1e-4 * (1.0 + plain.abs()),
                    "{kernel:?} at {n}: {got} against {plain}"
                );
                let got = kernel.dot_codes(&query, &codes);
                assert!(
                    (got - plain_codes).abs() <= 1e-4 * (1.0 + plain_codes.abs()),
                    "{kernel:?}, codes at {n}: {got} against {plain_codes}"
                );
            }
        }
    }
}

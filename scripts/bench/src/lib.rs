//! What the benchmark binaries share.

pub mod stats {
    //! Order statistics of samples.

    /// The median; `values` is sorted in place.
    pub fn median(values: &mut [f64]) -> f64 {
        values.sort_by(|a, b| a.total_cmp(b));
        let n = values.len();
        if n == 0 {
            return f64::NAN;
        }
        if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 }
    }

    /// The `q` quantile (0 to 1), nearest rank.
    pub fn quantile(values: &[f64], q: f64) -> f64 {
        if values.is_empty() {
            return f64::NAN;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(|a, b| a.total_cmp(b));
        sorted[((q * sorted.len() as f64).ceil() as usize).saturating_sub(1).min(sorted.len() - 1)]
    }

    pub fn p90(values: &[f64]) -> f64 {
        quantile(values, 0.9)
    }

    /// `x` to one decimal, as the figures are printed.
    pub fn round1(x: f64) -> f64 {
        (x * 10.0).round() / 10.0
    }

    /// `x` to two decimals.
    pub fn round2(x: f64) -> f64 {
        (x * 100.0).round() / 100.0
    }
}

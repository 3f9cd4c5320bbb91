//! Mean and 95% confidence interval over a sweep point's seeds.
//!
//! The interval is the Student-t interval `mean ± t(0.975, n-1) · s / sqrt(n)`, `s` the sample
//! standard deviation (n-1 in the denominator). It assumes the replications are independent
//! draws of a roughly normal metric; with few seeds it is wide, as it should be.

/// Two-sided 95% critical values `t(0.975, df)` of Student's t distribution, for `df` =
/// 1..=30, then 40, 50, 60, 80, 100, 120: NIST/SEMATECH e-Handbook of Statistical Methods,
/// §1.3.6.7.2 "Critical Values of the Student's t Distribution" (column 0.975), to 3 decimals.
const T_975: [(u32, f64); 36] = [
    (1, 12.706),
    (2, 4.303),
    (3, 3.182),
    (4, 2.776),
    (5, 2.571),
    (6, 2.447),
    (7, 2.365),
    (8, 2.306),
    (9, 2.262),
    (10, 2.228),
    (11, 2.201),
    (12, 2.179),
    (13, 2.160),
    (14, 2.145),
    (15, 2.131),
    (16, 2.120),
    (17, 2.110),
    (18, 2.101),
    (19, 2.093),
    (20, 2.086),
    (21, 2.080),
    (22, 2.074),
    (23, 2.069),
    (24, 2.064),
    (25, 2.060),
    (26, 2.056),
    (27, 2.052),
    (28, 2.048),
    (29, 2.045),
    (30, 2.042),
    (40, 2.021),
    (50, 2.009),
    (60, 2.000),
    (80, 1.990),
    (100, 1.984),
    (120, 1.980),
];

/// The normal quantile z(0.975), used beyond the table's last entry.
const Z_975: f64 = 1.960;

/// `t(0.975, df)`; between table entries the value of the next smaller `df` (slightly wider,
/// never narrower than the exact interval). `df` must be at least 1.
pub fn t_975(df: u32) -> f64 {
    assert!(df >= 1, "Student's t needs at least one degree of freedom");
    if df > 120 {
        return Z_975;
    }
    T_975
        .iter()
        .rev()
        .find(|(d, _)| *d <= df)
        .map(|(_, t)| *t)
        .expect("df >= 1 is in the table")
}

/// Mean and 95% half-width of `xs` (in order; the sums run in that order, so the result is
/// the same bytes for the same input). Half-width `None` with fewer than two values.
pub fn mean_ci95(xs: &[f64]) -> Option<(f64, Option<f64>)> {
    if xs.is_empty() {
        return None;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 {
        return Some((mean, None));
    }
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
    let half = t_975(xs.len() as u32 - 1) * var.sqrt() / n.sqrt();
    Some((mean, Some(half)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_lookups() {
        assert_eq!(t_975(1), 12.706);
        assert_eq!(t_975(2), 4.303);
        assert_eq!(t_975(30), 2.042);
        assert_eq!(t_975(35), 2.042);
        assert_eq!(t_975(45), 2.021);
        assert_eq!(t_975(120), 1.980);
        assert_eq!(t_975(10_000), 1.960);
        // Decreasing in df.
        for w in T_975.windows(2) {
            assert!(w[0].0 < w[1].0 && w[0].1 > w[1].1, "{w:?}");
        }
    }

    #[test]
    fn textbook_interval() {
        // 1, 2, 3: mean 2, s = 1, half-width t(0.975, 2) / sqrt(3) = 4.303 / 1.732...
        let (m, h) = mean_ci95(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(m, 2.0);
        assert!((h.unwrap() - 4.303 / 3f64.sqrt()).abs() < 1e-12);
        assert_eq!(mean_ci95(&[5.0]), Some((5.0, None)));
        assert_eq!(mean_ci95(&[]), None);
        assert_eq!(mean_ci95(&[4.0, 4.0]), Some((4.0, Some(0.0))));
    }
}

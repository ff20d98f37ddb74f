//! Pareto fronts (minimisation of every objective), NSGA-II's non-dominated sorting
//! and crowding distance, and the hypervolume of a front.

/// Whether `a` dominates `b`: no worse in every objective, better in one.
pub fn dominates(a: &[f64], b: &[f64]) -> bool {
    a.iter().zip(b).all(|(x, y)| x <= y) && a.iter().zip(b).any(|(x, y)| x < y)
}

/// Indices of the non-dominated points (duplicates: the first kept), in input order.
pub fn front(points: &[Vec<f64>]) -> Vec<usize> {
    (0..points.len())
        .filter(|&i| {
            !points
                .iter()
                .enumerate()
                .any(|(j, q)| dominates(q, &points[i]) || (j < i && q == &points[i]))
        })
        .collect()
}

/// Non-dominated sorting: the fronts in order, each a list of indices.
pub fn sort_fronts(points: &[Vec<f64>]) -> Vec<Vec<usize>> {
    let n = points.len();
    let mut dominated_by = vec![0usize; n];
    let mut dominates_list: Vec<Vec<usize>> = vec![Vec::new(); n];
    for i in 0..n {
        for j in 0..n {
            if i != j && dominates(&points[i], &points[j]) {
                dominates_list[i].push(j);
            } else if i != j && dominates(&points[j], &points[i]) {
                dominated_by[i] += 1;
            }
        }
    }
    let mut fronts = Vec::new();
    let mut current: Vec<usize> = (0..n).filter(|&i| dominated_by[i] == 0).collect();
    while !current.is_empty() {
        let mut next = Vec::new();
        for &i in &current {
            for &j in &dominates_list[i] {
                dominated_by[j] -= 1;
                if dominated_by[j] == 0 {
                    next.push(j);
                }
            }
        }
        next.sort_unstable();
        fronts.push(current);
        current = next;
    }
    fronts
}

/// Crowding distance of each member of one front (infinite at the extremes).
#[allow(clippy::needless_range_loop)] // k indexes the objective of every point
pub fn crowding(points: &[Vec<f64>], members: &[usize]) -> Vec<f64> {
    let mut d = vec![0.0; members.len()];
    let m = points.first().map_or(0, Vec::len);
    for k in 0..m {
        let mut order: Vec<usize> = (0..members.len()).collect();
        order.sort_by(|&a, &b| {
            points[members[a]][k]
                .total_cmp(&points[members[b]][k])
                .then(a.cmp(&b))
        });
        let (lo, hi) = (
            points[members[order[0]]][k],
            points[members[*order.last().unwrap_or(&0)]][k],
        );
        if let (Some(&f), Some(&l)) = (order.first(), order.last()) {
            d[f] = f64::INFINITY;
            d[l] = f64::INFINITY;
        }
        let span = hi - lo;
        if span <= 0.0 {
            continue;
        }
        for w in order.windows(3) {
            d[w[1]] += (points[members[w[2]]][k] - points[members[w[0]]][k]) / span;
        }
    }
    d
}

/// Area dominated by 2-D points below `reference` (both minimised): a sweep in x,
/// the height between consecutive x the reference minus the least y so far.
fn hv2(points: &mut [[f64; 2]], reference: [f64; 2]) -> f64 {
    points.sort_by(|a, b| a[0].total_cmp(&b[0]).then(a[1].total_cmp(&b[1])));
    let mut area = 0.0;
    let mut min_y = reference[1];
    for (i, p) in points.iter().enumerate() {
        if p[0] >= reference[0] {
            break;
        }
        min_y = min_y.min(p[1]);
        let x_next = points
            .get(i + 1)
            .map_or(reference[0], |q| q[0].min(reference[0]));
        area += (x_next - p[0]).max(0.0) * (reference[1] - min_y).max(0.0);
    }
    area
}

/// Volume dominated by 3-D points below `reference` (all minimised), by slicing along
/// the first objective.
pub fn hypervolume(points: &[[f64; 3]], reference: [f64; 3]) -> f64 {
    let mut pts: Vec<[f64; 3]> = points
        .iter()
        .copied()
        .filter(|p| p.iter().zip(&reference).all(|(x, r)| x < r))
        .collect();
    pts.sort_by(|a, b| a[0].total_cmp(&b[0]));
    let mut vol = 0.0;
    for i in 0..pts.len() {
        let x_next = pts.get(i + 1).map_or(reference[0], |q| q[0]);
        let depth = x_next - pts[i][0];
        if depth <= 0.0 {
            continue;
        }
        let mut slice: Vec<[f64; 2]> = pts[..=i].iter().map(|p| [p[1], p[2]]).collect();
        vol += depth * hv2(&mut slice, [reference[1], reference[2]]);
    }
    vol
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_and_sorting() {
        let p = vec![
            vec![1.0, 5.0],
            vec![2.0, 2.0],
            vec![3.0, 3.0],
            vec![5.0, 1.0],
            vec![2.0, 2.0],
        ];
        assert_eq!(front(&p), vec![0, 1, 3]);
        let f = sort_fronts(&p);
        assert_eq!(f[0], vec![0, 1, 3, 4]);
        assert_eq!(f[1], vec![2]);
        let c = crowding(&p, &f[0]);
        assert!(c[0].is_infinite() && c[2].is_infinite() && c[1].is_finite());
    }

    #[test]
    fn hypervolume_of_boxes() {
        // One point at the origin against (1,1,1): the unit cube.
        assert!((hypervolume(&[[0.0, 0.0, 0.0]], [1.0, 1.0, 1.0]) - 1.0).abs() < 1e-12);
        // Two boxes 0.5 x 1 x 1 and 1 x 0.5 x 1 overlapping in 0.5 x 0.5 x 1: 0.75.
        let v = hypervolume(&[[0.0, 0.5, 0.0], [0.5, 0.0, 0.0]], [1.0, 1.0, 1.0]);
        assert!((v - 0.75).abs() < 1e-12, "{v}");
        // A dominated point adds nothing; a point outside the reference is ignored.
        let v2 = hypervolume(
            &[
                [0.0, 0.5, 0.0],
                [0.5, 0.0, 0.0],
                [0.6, 0.6, 0.6],
                [2.0, 0.0, 0.0],
            ],
            [1.0, 1.0, 1.0],
        );
        assert!((v2 - 0.75).abs() < 1e-12, "{v2}");
    }
}

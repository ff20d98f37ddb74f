//! Hostile bytes never panic: truncated and corrupted caffemodels, garbage prototxts.
//! Every failure is an `ImportError` (Malformed for undecodable bytes).

mod caffe_support;

use caffe_support::*;
use nnac_frontend::caffe::import_bytes;
use nnac_frontend::{ImportError, ImportOptions};

fn net() -> String {
    net_with_input(
        &[1, 3, 6, 6],
        r#"layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1" convolution_param { num_output: 4 kernel_size: 3 } }
           layer { name: "bn" type: "BatchNorm" bottom: "conv1" top: "conv1" }
           layer { name: "fc" type: "InnerProduct" bottom: "conv1" top: "fc" inner_product_param { num_output: 2 } }"#,
    )
}

fn good_model() -> Vec<u8> {
    model(vec![
        ("conv1", vec![blob(&[4, 3, 3, 3], 0.01), blob(&[4], 0.1)]),
        (
            "bn",
            vec![blob(&[4], 0.1), blob(&[4], 0.1), blob(&[1], 1.0)],
        ),
        ("fc", vec![blob(&[2, 64], 0.01), blob(&[2], 0.1)]),
    ])
}

/// A small deterministic generator (xorshift) so the corruptions are reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn the_uncorrupted_model_imports() {
    import_ok(&net(), Some(&good_model()));
}

#[test]
fn every_truncation_fails_cleanly_or_imports() {
    let p = net();
    let bytes = good_model();
    let mut failures = 0;
    for len in 0..bytes.len() {
        match import_bytes(p.as_bytes(), Some(&bytes[..len]), &ImportOptions::default()) {
            Ok(_) => {}
            Err(ImportError::Malformed { .. } | ImportError::Invalid { .. }) => failures += 1,
            Err(e) => panic!("truncated at {len}: unexpected error kind {e:?}"),
        }
    }
    assert!(
        failures > bytes.len() / 2,
        "only {failures} truncations were rejected"
    );
}

#[test]
fn random_corruptions_never_panic() {
    let p = net();
    let good = good_model();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut rejected = 0;
    for _ in 0..800 {
        let mut bytes = good.clone();
        for _ in 0..1 + rng.next() % 4 {
            let i = (rng.next() % bytes.len() as u64) as usize;
            bytes[i] = rng.next() as u8;
        }
        if import_bytes(p.as_bytes(), Some(&bytes), &ImportOptions::default()).is_err() {
            rejected += 1;
        }
    }
    assert!(rejected > 30, "only {rejected} corruptions were rejected");
}

#[test]
fn random_bytes_as_caffemodel_or_prototxt_never_panic() {
    let p = net();
    let mut rng = Rng(12345);
    for len in [0usize, 1, 2, 7, 64, 1000] {
        for _ in 0..50 {
            let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            let _ = import_bytes(p.as_bytes(), Some(&bytes), &ImportOptions::default());
            let r = import_bytes(&bytes, None, &ImportOptions::default());
            assert!(r.is_err() || len == 0, "random prototxt bytes imported");
        }
    }
}

#[test]
fn huge_declared_shapes_are_rejected_without_allocating() {
    let p = net_with_input(
        &[1, 3, 6, 6],
        r#"layer { name: "fc" type: "InnerProduct" bottom: "data" top: "fc" inner_product_param { num_output: 4000000000 } }"#,
    );
    let m = model(vec![("fc", vec![blob_of(&[4_000_000_000, 108], &[1.0])])]);
    let e = import(&p, Some(&m)).unwrap_err();
    assert!(e.to_string().contains("node 'fc'"), "{e}");
}

//! The residual stream's additions (`x + sublayer(x)`), on our own pool when the tensors are CPU
//! f32. candle's element-wise ops hand a tensor of 64 Ki elements or more to candle's own
//! thread pool, whose spinning workers then contend for the cores with our pool's: on 2 cores a
//! 118-token prefill step of the default model (68 Ki elements in its residual stream) took
//! 2.4× an 80-token one. Element-wise sums have one result whatever the split, so this gives
//! candle's bits.

use candle_core::{DType, Tensor};

use super::projections::with_f32;

/// At and above this many elements the sum runs on the pool, in chunks of [`CHUNK`].
const PARALLEL_MIN: usize = 1 << 16;
const CHUNK: usize = 1 << 14;

/// `x + y`: ours for two CPU f32 tensors of one shape (either may be strided), candle's add
/// otherwise.
pub(crate) fn add(x: &Tensor, y: &Tensor) -> candle_core::Result<Tensor> {
    let ours = x.device().is_cpu()
        && x.dtype() == DType::F32
        && y.dtype() == DType::F32
        && x.shape() == y.shape();
    if !ours {
        return x + y;
    }
    let sum = with_f32(x, |a| with_f32(y, |b| sum(a, b)))??;
    Tensor::from_vec(sum, x.shape(), x.device())
}

/// `a + b` element by element, on the pool when long.
fn sum(a: &[f32], b: &[f32]) -> Vec<f32> {
    let mut out = a.to_vec();
    let add = |(o, b): (&mut [f32], &[f32])| o.iter_mut().zip(b).for_each(|(o, b)| *o += b);
    if out.len() >= PARALLEL_MIN {
        let pieces: Vec<_> = out.chunks_mut(CHUNK).zip(b.chunks(CHUNK)).collect();
        crate::kernels::team::for_each_item(pieces, add);
    } else {
        add((&mut out, b));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn sums_give_candles_bits_on_either_side_of_the_pool_threshold() {
        for n in [7, PARALLEL_MIN - 1, PARALLEL_MIN + CHUNK / 3] {
            let v = |s: f32| {
                (0..n)
                    .map(|i| ((i as f32) * s).sin() * 1e3)
                    .collect::<Vec<_>>()
            };
            let x = Tensor::from_vec(v(0.37), n, &Device::Cpu).unwrap();
            let y = Tensor::from_vec(v(1.91), n, &Device::Cpu).unwrap();
            let ours = add(&x, &y).unwrap().to_vec1::<f32>().unwrap();
            let theirs = (&x + &y).unwrap().to_vec1::<f32>().unwrap();
            assert_eq!(ours, theirs, "{n} elements");
        }
    }

    #[test]
    fn strided_inputs_are_read_in_order_and_other_types_go_to_candle() {
        let x = Tensor::ones((2, 3), DType::F32, &Device::Cpu).unwrap();
        let row = Tensor::ones(3, DType::F32, &Device::Cpu).unwrap();
        let b = add(&x, &row.unsqueeze(0).unwrap().broadcast_as((2, 3)).unwrap()).unwrap();
        assert_eq!(b.to_vec2::<f32>().unwrap(), vec![vec![2.0; 3]; 2]);
        let h = x.to_dtype(DType::F16).unwrap();
        assert_eq!(add(&h, &h).unwrap().dtype(), DType::F16);
    }
}

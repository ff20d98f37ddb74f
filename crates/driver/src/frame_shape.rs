//! How many frames an input file holds: the one rule (and the one error message) of
//! `compile --calib`, `eval --input` and `run --input`. A tensor of exactly the input's
//! shape is one frame; one extra leading dimension `N > 0` stacks `N` frames.

use crate::error::InputFileError;

/// `(frames, stacked)` for a tensor of shape `got` fed to input `input` whose one frame
/// has shape `frame`; the error names the input and both shapes (callers prefix the file).
pub fn frames_in(
    input: &str,
    got: &[usize],
    frame: &[usize],
) -> Result<(usize, bool), InputFileError> {
    if got == frame {
        return Ok((1, false));
    }
    if got.len() == frame.len() + 1 && got[1..] == *frame {
        return match got[0] {
            0 => Err(InputFileError::NoFrames {
                input: input.to_string(),
            }),
            n => Ok((n, true)),
        };
    }
    Err(InputFileError::Shape {
        input: input.to_string(),
        frame: frame.to_vec(),
        got: got.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::frames_in;
    use crate::error::InputFileError;

    #[test]
    fn one_frame_stacked_frames_and_mismatches() {
        assert_eq!(frames_in("x", &[1, 3, 4], &[1, 3, 4]), Ok((1, false)));
        assert_eq!(frames_in("x", &[5, 1, 3, 4], &[1, 3, 4]), Ok((5, true)));
        let e = frames_in("x", &[0, 1, 3, 4], &[1, 3, 4]).unwrap_err();
        assert_eq!(e, InputFileError::NoFrames { input: "x".into() });
        assert_eq!(e.to_string(), "input 'x': the file holds 0 frames");
        let e = frames_in("x", &[1, 3, 5], &[1, 3, 4]).unwrap_err();
        assert_eq!(
            e,
            InputFileError::Shape {
                input: "x".into(),
                frame: vec![1, 3, 4],
                got: vec![1, 3, 5]
            }
        );
        assert_eq!(
            e.to_string(),
            "input 'x' expects shape 1x3x4 (or Nx1x3x4 for N frames), the file has 1x3x5"
        );
    }
}

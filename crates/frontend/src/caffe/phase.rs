//! Caffe's `include`/`exclude` rules (`Net::FilterNet`): nnac runs networks in the TEST
//! phase with the level and stages of the prototxt's `state`, so layers meant only for
//! training (data layers, losses, accuracy) are dropped.

use crate::proto::caffe::{NetState, NetStateRule, Phase};

/// The state the network runs in: TEST phase, level and stages from the prototxt.
pub(super) struct State {
    level: i32,
    stages: Vec<String>,
}

impl State {
    pub(super) fn test(declared: Option<&NetState>) -> State {
        State {
            level: declared.map_or(0, NetState::level),
            stages: declared.map(|s| s.stage.clone()).unwrap_or_default(),
        }
    }

    /// Whether a layer with these rules is part of the net (Caffe: with include rules,
    /// any met rule includes it; with exclude rules, any met rule excludes it).
    pub(super) fn includes(&self, include: &[NetStateRule], exclude: &[NetStateRule]) -> bool {
        if !include.is_empty() {
            return include.iter().any(|r| self.meets(r));
        }
        !exclude.iter().any(|r| self.meets(r))
    }

    fn meets(&self, r: &NetStateRule) -> bool {
        let phase_ok = r.phase.is_none_or(|p| p == Phase::Test as i32);
        let min_ok = r.min_level.is_none_or(|m| self.level >= m);
        let max_ok = r.max_level.is_none_or(|m| self.level <= m);
        let stages_ok = r.stage.iter().all(|s| self.stages.contains(s));
        let not_stages_ok = r.not_stage.iter().all(|s| !self.stages.contains(s));
        phase_ok && min_ok && max_ok && stages_ok && not_stages_ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(phase: Phase) -> NetStateRule {
        NetStateRule {
            phase: Some(phase as i32),
            ..Default::default()
        }
    }

    #[test]
    fn train_only_layers_are_dropped() {
        let s = State::test(None);
        assert!(!s.includes(&[rule(Phase::Train)], &[]));
        assert!(s.includes(&[rule(Phase::Test)], &[]));
        assert!(s.includes(&[], &[rule(Phase::Train)]));
        assert!(!s.includes(&[], &[rule(Phase::Test)]));
        assert!(s.includes(&[], &[]));
    }

    #[test]
    fn levels_and_stages_are_checked() {
        let s = State::test(Some(&NetState {
            level: Some(2),
            stage: vec!["deploy".into()],
            ..Default::default()
        }));
        let lvl = NetStateRule {
            min_level: Some(3),
            ..Default::default()
        };
        assert!(!s.includes(&[lvl], &[]));
        let stage = NetStateRule {
            stage: vec!["deploy".into()],
            ..Default::default()
        };
        assert!(s.includes(&[stage], &[]));
        let not_stage = NetStateRule {
            not_stage: vec!["deploy".into()],
            ..Default::default()
        };
        assert!(!s.includes(&[not_stage], &[]));
    }
}

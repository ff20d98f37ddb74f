//! The import driver: initializers, graph inputs, then every node in model order
//! through its builder, then the graph outputs. Failures are collected so that one
//! error lists every unsupported node.

use super::attrs::Attrs;
use super::ctx::{Ctx, NodeCx, NodeError, Out, Slot};
use super::initializer::{tensor_from_proto, TensorError};
use super::model::{self, Opsets};
use super::{inputs, registry};
use crate::proto::onnx::{GraphProto, NodeProto};
use crate::{ImportError, ImportOptions, Unsupported};
use nnac_ir::Graph;
use prost::bytes::Bytes;
use std::collections::BTreeSet;
use std::path::Path;
use std::rc::Rc;

/// Everything that went wrong, reported at the end.
#[derive(Default)]
struct Report {
    unsupported: Vec<Unsupported>,
    seen: BTreeSet<(String, String)>,
    /// The first semantic error (later ones are usually its consequences).
    invalid: Option<(String, String)>,
}

impl Report {
    fn unsupported(&mut self, u: Unsupported) {
        if self.seen.insert((u.node.clone(), u.reason.clone())) {
            self.unsupported.push(u);
        }
    }

    fn invalid(&mut self, node: &str, msg: String) {
        self.invalid.get_or_insert((node.to_string(), msg));
    }

    fn finish(self) -> Result<(), ImportError> {
        if !self.unsupported.is_empty() {
            return Err(ImportError::Unsupported(self.unsupported));
        }
        match self.invalid {
            Some((node, msg)) => Err(ImportError::Invalid { node, msg }),
            None => Ok(()),
        }
    }
}

/// Imports a serialized model; `path` names it in errors.
pub fn import_model(
    bytes: Bytes,
    base_dir: Option<&Path>,
    path: &Path,
    opts: &ImportOptions,
) -> Result<Graph, ImportError> {
    let mut model = model::decode(bytes, path)?;
    let opsets = model::check_versions(&model, path)?;
    let mut g = model.graph.take().ok_or_else(|| ImportError::Malformed {
        path: path.to_path_buf(),
        msg: "the model has no graph".into(),
    })?;
    drop(model);
    let graph_name = if g.name().is_empty() {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    } else {
        g.name().to_string()
    };
    let mut ctx = Ctx::new(&graph_name, base_dir);
    let mut report = Report::default();
    let init_names = add_initializers(&mut ctx, &mut g, base_dir, &mut report)?;
    for u in inputs::add_inputs(&mut ctx, &g.input, &init_names, opts)? {
        report.unsupported(u);
    }
    for node in &g.node {
        lower_node(&mut ctx, node, &opsets, &mut report);
    }
    add_outputs(&mut ctx, &g, &mut report);
    report.finish()?;
    Ok(ctx.graph)
}

/// Converts the initializers (dropping each proto once converted) into pending
/// constants; returns their names.
fn add_initializers(
    ctx: &mut Ctx,
    g: &mut GraphProto,
    base_dir: Option<&Path>,
    report: &mut Report,
) -> Result<BTreeSet<String>, ImportError> {
    let mut names = BTreeSet::new();
    for t in std::mem::take(&mut g.initializer) {
        let name = t.name().to_string();
        if name.is_empty() {
            return Err(ImportError::Invalid {
                node: "<initializer>".into(),
                msg: "an initializer has no name".into(),
            });
        }
        match tensor_from_proto(&t, base_dir) {
            Ok(tensor) => ctx.set(&name, Slot::Pending(Rc::new(tensor))),
            Err(TensorError::Unsupported(reason)) => {
                let u = Unsupported {
                    node: name.clone(),
                    op_type: "initializer".into(),
                    opset: 0,
                    reason,
                };
                report.unsupported(u.clone());
                ctx.set(&name, Slot::Unavailable(u));
            }
            Err(TensorError::Invalid(msg)) => return Err(ImportError::Invalid { node: name, msg }),
        }
        names.insert(name);
    }
    for s in &g.sparse_initializer {
        let name = s
            .values
            .as_ref()
            .map(|v| v.name().to_string())
            .unwrap_or_default();
        let u = Unsupported {
            node: name.clone(),
            op_type: "sparse initializer".into(),
            opset: 0,
            reason: "sparse tensors are not supported".into(),
        };
        report.unsupported(u.clone());
        ctx.set(&name, Slot::Unavailable(u));
        names.insert(name);
    }
    Ok(names)
}

/// The base of a node's IR name: its ONNX name, else its first output's name.
fn node_base_name(node: &NodeProto) -> &str {
    if !node.name().is_empty() {
        return node.name();
    }
    node.output
        .iter()
        .find(|o| !o.is_empty())
        .map_or(node.op_type(), String::as_str)
}

/// Reasons the node cannot be built regardless of its inputs: unknown domain or op,
/// unknown attribute, unsupported attribute value.
fn static_problems(cx: &NodeCx, report: &mut Report) -> Option<Vec<String>> {
    let domain = cx.proto.domain();
    if !Opsets::is_default_domain(domain) {
        return Some(vec![format!("operator domain '{domain}' is not supported")]);
    }
    let Some(def) = registry::lookup(cx.op_type()) else {
        return Some(vec!["operator not supported".into()]);
    };
    let mut problems: Vec<String> = cx
        .attrs
        .names()
        .filter(|a| !def.attrs.contains(a))
        .map(|a| format!("attribute '{a}' is not supported"))
        .collect();
    if let Some(check) = def.check {
        match check(cx) {
            Ok(()) => {}
            Err(NodeError::Unsupported(r)) => problems.push(r),
            Err(NodeError::Invalid(m)) => {
                report.invalid(&cx.name, m);
                return Some(Vec::new());
            }
        }
    }
    (!problems.is_empty()).then_some(problems)
}

/// Whether every present input has a usable value; reports missing and unavailable
/// ones.
fn inputs_ready(ctx: &Ctx, cx: &NodeCx, report: &mut Report) -> bool {
    let mut ok = true;
    for name in cx.proto.input.iter().filter(|n| !n.is_empty()) {
        match ctx.slot(name) {
            Some(Slot::Pending(_) | Slot::Graph(_)) => {}
            Some(Slot::Dead) => ok = false,
            Some(Slot::Unavailable(u)) => {
                report.unsupported(u.clone());
                ok = false;
            }
            None => {
                report.invalid(&cx.name, format!("input '{name}' is not produced by an earlier node, an initializer or a graph input"));
                ok = false;
            }
        }
    }
    ok
}

fn lower_node(ctx: &mut Ctx, node: &NodeProto, opsets: &Opsets, report: &mut Report) {
    let name = ctx.fresh(node_base_name(node));
    let opset = opsets.version(node.domain());
    let cx = NodeCx {
        proto: node,
        name,
        opset,
        attrs: Attrs::new(&node.attribute),
    };
    let unsupported = |reason: String| Unsupported {
        node: cx.name.clone(),
        op_type: node.op_type().into(),
        opset,
        reason,
    };
    let problems = static_problems(&cx, report);
    let ready = inputs_ready(ctx, &cx, report);
    if let Some(problems) = problems {
        for p in problems {
            report.unsupported(unsupported(p));
        }
        return kill_outputs(ctx, node);
    }
    if !ready {
        return kill_outputs(ctx, node);
    }
    let def = registry::lookup(cx.op_type()).expect("checked by static_problems");
    match (def.build)(ctx, &cx) {
        Ok(outs) => bind_outputs(ctx, &cx, outs, unsupported, report),
        Err(NodeError::Unsupported(r)) => {
            report.unsupported(unsupported(r));
            kill_outputs(ctx, node);
        }
        Err(NodeError::Invalid(m)) => {
            report.invalid(&cx.name, m);
            kill_outputs(ctx, node);
        }
    }
}

fn kill_outputs(ctx: &mut Ctx, node: &NodeProto) {
    for o in node.output.iter().filter(|o| !o.is_empty()) {
        ctx.set(o, Slot::Dead);
    }
}

fn bind_outputs(
    ctx: &mut Ctx,
    cx: &NodeCx,
    outs: Vec<Out>,
    unsupported: impl Fn(String) -> Unsupported,
    report: &mut Report,
) {
    let mut outs: Vec<Option<Out>> = outs.into_iter().map(Some).collect();
    for (k, out_name) in cx.proto.output.iter().enumerate() {
        if out_name.is_empty() {
            continue;
        }
        if ctx.slot(out_name).is_some() {
            report.invalid(
                &cx.name,
                format!("output '{out_name}' is already defined (ONNX values are assigned once)"),
            );
            continue;
        }
        let slot = match outs.get_mut(k).and_then(Option::take) {
            Some(Out::Value(v)) => Slot::Graph(v),
            Some(Out::Const(t)) => Slot::Pending(Rc::new(t)),
            Some(Out::Input(i)) => cx
                .input_name(i)
                .and_then(|n| ctx.slot(n))
                .cloned()
                .unwrap_or(Slot::Dead),
            None => Slot::Unavailable(unsupported(format!(
                "output #{k} ('{out_name}') is not supported"
            ))),
        };
        ctx.set(out_name, slot);
    }
}

fn add_outputs(ctx: &mut Ctx, g: &GraphProto, report: &mut Report) {
    for o in &g.output {
        let name = o.name();
        match ctx.slot(name) {
            Some(Slot::Pending(_) | Slot::Graph(_)) => match ctx.value_of_name(name) {
                Ok(v) => ctx.graph.add_output(name, v),
                Err(_) => report.invalid(name, "graph output has no value".into()),
            },
            Some(Slot::Dead) => {}
            Some(Slot::Unavailable(u)) => report.unsupported(u.clone()),
            None => report.invalid(
                name,
                format!("graph output '{name}' is not produced by any node"),
            ),
        }
    }
}

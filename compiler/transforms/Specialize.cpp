// gpt-specialize: turns the dynamic batch dimension into micro-batch (see
// Passes.td). Shapes flow forward from the arguments through each op's
// shape rule, the same rules the verifiers check.
#include "compiler/transforms/Passes.h"

#include "dialects/common/MatmulShape.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/TypeSwitch.h"

namespace gptc {
#define GEN_PASS_DEF_GPTSPECIALIZE
#include "compiler/transforms/Passes.h.inc"
} // namespace gptc

using namespace mlir;
using namespace gptc::gpt;

namespace {

RankedTensorType rankedType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

RankedTensorType withShape(Type like, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, cast<RankedTensorType>(like).getElementType());
}

SmallVector<int64_t> dropLast(Value v) {
  return SmallVector<int64_t>(rankedType(v).getShape().drop_back());
}

/// The static result types of `op` from its (already static) operands, or
/// failure with an error on `op`.
FailureOr<SmallVector<Type>> inferResultTypes(Operation *op) {
  Type f32 = Float32Type::get(op->getContext());
  auto stat = [&](ArrayRef<int64_t> shape) -> Type {
    return RankedTensorType::get(shape, f32);
  };
  using Types = SmallVector<Type>;
  return TypeSwitch<Operation *, FailureOr<Types>>(op)
      .Case([&](EmbeddingOp e) -> FailureOr<Types> {
        SmallVector<int64_t> shape(rankedType(e.getIds()).getShape());
        shape.push_back(rankedType(e.getTable()).getDimSize(1));
        return Types{withShape(e.getType(), shape)};
      })
      .Case([&](LayerNormOp n) -> FailureOr<Types> {
        Types types{n.getInput().getType()};
        for (size_t i = 0; i < n.getStats().size(); ++i)
          types.push_back(stat(dropLast(n.getInput())));
        return types;
      })
      .Case([&](MatmulOp m) -> FailureOr<Types> {
        auto shape = gptc::verifyMatmulShapes(
            m, rankedType(m.getA()).getShape(), rankedType(m.getB()).getShape(),
            m.getTransposeA(), m.getTransposeB());
        if (failed(shape))
          return failure();
        return Types{withShape(m.getType(), *shape)};
      })
      .Case([&](AddOp a) -> FailureOr<Types> {
        return Types{a.getLhs().getType()};
      })
      .Case<MulOp, GeluOp>([&](auto unary) -> FailureOr<Types> {
        return Types{unary.getInput().getType()};
      })
      .Case([&](SplitOp s) -> FailureOr<Types> {
        SmallVector<int64_t> shape(rankedType(s.getInput()).getShape());
        shape[s.getAxis()] /= static_cast<int64_t>(s.getResults().size());
        return Types(s.getResults().size(),
                     withShape(s.getInput().getType(), shape));
      })
      .Case([&](ConcatOp c) -> FailureOr<Types> {
        SmallVector<int64_t> shape(rankedType(c.getInputs()[0]).getShape());
        int64_t axis = c.getAxis();
        shape[axis] = 0;
        for (Value input : c.getInputs())
          shape[axis] += rankedType(input).getDimSize(axis);
        return Types{withShape(c.getType(), shape)};
      })
      .Case([&](AttentionOp a) -> FailureOr<Types> {
        RankedTensorType q = rankedType(a.getQ());
        Types types{q};
        if (!a.getLse().empty())
          types.push_back(stat({q.getDimSize(0), static_cast<int64_t>(a.getHeads()),
                                q.getDimSize(1)}));
        return types;
      })
      .Case([&](ReshapeOp r) -> FailureOr<Types> {
        RankedTensorType input = rankedType(r.getInput());
        SmallVector<int64_t> shape(r.getType().getShape());
        int64_t known = 1, dynamic = -1;
        for (auto [i, d] : llvm::enumerate(shape)) {
          if (!ShapedType::isDynamic(d)) {
            known *= d;
          } else if (dynamic >= 0) {
            return r.emitOpError("has two dynamic result dimensions; "
                                 "gpt-specialize can infer only one");
          } else {
            dynamic = i;
          }
        }
        if (dynamic >= 0)
          shape[dynamic] = input.getNumElements() / known;
        return Types{withShape(r.getType(), shape)};
      })
      .Case([&](TransposeOp t) -> FailureOr<Types> {
        RankedTensorType input = rankedType(t.getInput());
        SmallVector<int64_t> shape;
        for (int64_t p : t.getPerm())
          shape.push_back(input.getDimSize(p));
        return Types{withShape(t.getType(), shape)};
      })
      .Case([&](CrossEntropyOp c) -> FailureOr<Types> {
        Types types{c.getLoss().getType()};
        if (!c.getLse().empty())
          types.push_back(stat(dropLast(c.getLogits())));
        return types;
      })
      .Default([&](Operation *other) -> FailureOr<Types> {
        return other->emitOpError(
            "has a dynamic result shape that gpt-specialize cannot infer; run "
            "gpt-specialize on the model before gpt-autodiff");
      });
}

class GptSpecializePass
    : public gptc::impl::GptSpecializeBase<GptSpecializePass> {
public:
  using Base::Base;

  void runOnOperation() override {
    if (microBatch <= 0) {
      getOperation().emitError()
          << "gpt-specialize needs micro-batch > 0, got "
          << static_cast<int64_t>(microBatch)
          << "; pass gpt-specialize{micro-batch=B} (in the pipeline: "
             "gpt-train-pipeline{micro-batch=B})";
      return signalPassFailure();
    }
    for (func::FuncOp func : getOperation().getOps<func::FuncOp>())
      if (failed(specialize(func)))
        return signalPassFailure();
  }

private:
  LogicalResult specialize(func::FuncOp func) {
    if (func.isExternal())
      return success();
    Block &body = func.front();
    int64_t modelSeq = 0;
    for (BlockArgument arg : body.getArguments()) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type || type.hasStaticShape())
        continue;
      SmallVector<int64_t> shape(type.getShape());
      for (int64_t &d : shape)
        if (ShapedType::isDynamic(d))
          d = microBatch;
      if (seq > 0 && shape.size() == 2) {
        modelSeq = shape[1];
        if (seq > modelSeq)
          return func.emitOpError()
                 << "argument #" << arg.getArgNumber() << " has sequence length "
                 << modelSeq << "; seq " << static_cast<int64_t>(seq)
                 << " would read position embeddings past the model's "
                    "context length: use at most "
                 << modelSeq;
        shape[1] = seq;
      }
      arg.setType(withShape(type, shape));
    }
    for (Operation &op : body.without_terminator()) {
      if (auto arange = dyn_cast<ArangeOp>(op)) {
        // Position ids cover one sequence.
        if (modelSeq && arange.getType().getDimSize(0) == modelSeq)
          arange.getResult().setType(withShape(arange.getType(), {seq}));
        continue;
      }
      bool dynamic = llvm::any_of(op.getResultTypes(), [](Type t) {
        auto ranked = dyn_cast<RankedTensorType>(t);
        return ranked && !ranked.hasStaticShape();
      });
      // A shorter sequence changes static shapes too: recompute every op
      // the rules know, and insist only where a shape is still open.
      bool known = isa<EmbeddingOp, LayerNormOp, MatmulOp, AddOp, MulOp, GeluOp,
                       SplitOp, ConcatOp, AttentionOp, ReshapeOp, TransposeOp,
                       CrossEntropyOp>(op);
      if (!dynamic && !(known && modelSeq))
        continue;
      FailureOr<SmallVector<Type>> types = inferResultTypes(&op);
      if (failed(types))
        return failure();
      for (auto [result, type] : llvm::zip(op.getResults(), *types))
        result.setType(type);
    }
    func.setType(FunctionType::get(&getContext(), body.getArgumentTypes(),
                                   body.getTerminator()->getOperandTypes()));
    return success();
  }
};

} // namespace

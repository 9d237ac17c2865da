"""A tool verifiers environment (verifiers 0.4's v1 stack) for the tests: products with a calculator toolset.

The `calc` toolset's `evaluate` tool (advertised as `calc_evaluate`) evaluates + - * of integers (parsed, never
executed as code). Rubric: `correct` (weight 1.0) the product appears in the final reply; `used_tool` (weight 0.25)
a tool result came back. Stop: after `max_calls` tool results. Importable by id `vf_calc_env` with this folder on the
path."""

import ast
import operator

import verifiers.v1 as vf

OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


def evaluate(node: ast.AST) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        return OPERATORS[type(node.op)](evaluate(node.left), evaluate(node.right))
    raise ValueError("only + - * of integers")


class CalculatorToolset(vf.Toolset[vf.ToolsetConfig]):
    TOOL_PREFIX = "calc"

    @vf.tool
    def evaluate(self, expression: str) -> str:
        """Evaluate an arithmetic expression of integers with + - *."""
        return str(evaluate(ast.parse(expression[:200], mode="eval").body))


class ProductData(vf.TaskData):
    answer: int


class ProductTaskConfig(vf.TaskConfig):
    tools: vf.ToolsetConfig = vf.ToolsetConfig()
    max_calls: int = 2


class ProductTask(vf.Task[ProductData, vf.State, ProductTaskConfig]):
    @classmethod
    def toolsets(cls, config: ProductTaskConfig) -> list[vf.Toolset]:
        return [CalculatorToolset(config.tools)]

    @vf.stop
    async def enough_calls(self, trace: vf.Trace) -> bool:
        return len(trace.tool_messages) >= self.config.max_calls

    @vf.reward(weight=1.0)
    async def correct(self, trace: vf.Trace) -> float:
        return float(str(self.data.answer) in trace.last_reply)

    @vf.reward(weight=0.25)
    async def used_tool(self, trace: vf.Trace) -> float:
        return float(bool(trace.tool_messages))


class ProductConfig(vf.TasksetConfig):
    task: ProductTaskConfig = ProductTaskConfig()
    count: int = 3


class ProductTaskset(vf.Taskset[ProductTask, ProductConfig]):
    def load(self) -> list[ProductTask]:
        return [
            ProductTask(
                ProductData(
                    idx=i, prompt=f"What is {i + 3} * {i + 4}? Use the calculator tool.", answer=(i + 3) * (i + 4)
                ),
                self.config.task,
            )
            for i in range(self.config.count)
        ]


__all__ = ["ProductTaskset"]


if __name__ == "__main__":  # verifiers' runtimes start the toolset's MCP server as `python -m vf_calc_env`
    CalculatorToolset.run()

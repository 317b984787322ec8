"""The rubric compiler: a prose rubric (a TOML spec) -> a checked `.rbg` program.

The model is shown the language and the catalog, writes a program (as source,
or as JSON IR under constrained decoding), and the checker's findings are fed
back for a bounded number of repairs. See docs/compiler.md.
"""

from rubriclang.llm.compiler.ir import ir_schema, print_ir, validate_ir
from rubriclang.llm.compiler.log import CompileLog, default_log_path
from rubriclang.llm.compiler.loop import DEFAULT_SAMPLING, Attempt, CompileResult, compile_rubric
from rubriclang.llm.compiler.spec import Spec, SpecError, load_spec, spec_from_dict

__all__ = [
    "DEFAULT_SAMPLING",
    "Attempt",
    "CompileLog",
    "CompileResult",
    "Spec",
    "SpecError",
    "compile_rubric",
    "default_log_path",
    "ir_schema",
    "load_spec",
    "print_ir",
    "spec_from_dict",
    "validate_ir",
]

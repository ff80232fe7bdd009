"""The plan: Compiled, what was decided for a model on a board (compiled.py), the options that decide
it (options.py: CompileOptions) and those of its C (code_options.py), plan.json as plain data
(record.py), its fields as typed records (typed.py) and on disk (codec.py, versioned and validating:
nothing reads a plan.json raw)."""
from mcudeploy.plan.code_options import CodeOptions
from mcudeploy.plan.codec import (PLAN_FILE, PLAN_VERSION, PlanFile, as_written, board_plan, plan_path, read_plan,
                                  system_plan, write_plan)
from mcudeploy.plan.compiled import Compiled
from mcudeploy.plan.ident import PLAN_ID_FIELDS, PLAN_ID_IF_PRESENT, plan_id
from mcudeploy.plan.options import CompileOptions
from mcudeploy.plan.record import model_sha256, plan_dict
from mcudeploy.plan.typed import BoardPlan, PlanError, SystemPlan

__all__ = ["BoardPlan", "CodeOptions", "CompileOptions", "Compiled", "PLAN_FILE", "PLAN_ID_FIELDS",
           "PLAN_ID_IF_PRESENT", "PLAN_VERSION", "PlanError", "PlanFile", "SystemPlan", "as_written", "board_plan",
           "model_sha256", "plan_dict", "plan_id", "plan_path", "read_plan", "system_plan", "write_plan"]

from mcudeploy.codegen.emit import context, write_project

__all__ = ["context", "write_project"]

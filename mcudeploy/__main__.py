from mcudeploy.cli import entry

entry()

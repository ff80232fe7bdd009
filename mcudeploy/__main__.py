from mcudeploy.launch import entry

entry()

from mcudeploy.cli import main

raise SystemExit(main())

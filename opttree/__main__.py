from opttree.cli import main

raise SystemExit(main())

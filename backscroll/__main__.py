from backscroll.cli import main

raise SystemExit(main())

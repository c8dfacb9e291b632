"""graphscope's Dash dashboard, installed as ``graphscope.app`` (issue: Dashboard)."""

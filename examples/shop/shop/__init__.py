"""The shop's tools: agent.yaml names them with `python: shop.tools`."""

"""Demo MCP App "table": a sortable, searchable product table paged through an app-only tool.

The view subscribes to the catalogue resource: `restock` changes it, and every open table shows
the new stock without polling.

Run: python -m mcp_apps_host.demo.table [--http PORT]
"""

from __future__ import annotations

import json
import math
import random
import uuid
from typing import Annotated, Any

from mcp.server.apps import Apps
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from mcp_apps_host.demo._common import load_view, result, run
from mcp_apps_host.version import __version__

VIEW_URI = "ui://table/products.html"
CATALOGUE_URI = "table://products"  # what open tables follow
ROW_COUNT = 200
SEED = 1865

COLUMNS = [
    {"key": "sku", "label": "SKU", "type": "text"},
    {"key": "name", "label": "Product", "type": "text"},
    {"key": "category", "label": "Category", "type": "text"},
    {"key": "price", "label": "Price", "type": "money"},
    {"key": "stock", "label": "Stock", "type": "number"},
    {"key": "rating", "label": "Rating", "type": "rating"},
]
SORTABLE = {c["key"] for c in COLUMNS} | {"id"}

ADJECTIVES = ["Classic", "Compact", "Deluxe", "Ergonomic", "Essential", "Modern", "Nordic", "Portable",
              "Premium", "Rustic", "Sleek", "Vintage"]
# category -> (materials, products, price range in whole dollars)
CATEGORIES: dict[str, tuple[list[str], list[str], tuple[int, int]]] = {
    "Furniture": (["Oak", "Walnut", "Maple", "Bamboo", "Steel"],
                  ["Chair", "Desk", "Stool", "Bookshelf", "Side Table", "Bench"], (59, 899)),
    "Kitchen": (["Ceramic", "Copper", "Steel", "Glass", "Bamboo"],
                ["Mug", "Teapot", "Cutting Board", "Skillet", "Bowl Set", "Kettle"], (9, 149)),
    "Lighting": (["Brass", "Glass", "Copper", "Steel", "Rattan"],
                 ["Desk Lamp", "Floor Lamp", "Pendant Light", "Lantern", "Wall Sconce"], (24, 349)),
    "Office": (["Bamboo", "Leather", "Steel", "Walnut", "Cork"],
               ["Notebook", "Pen Holder", "Monitor Stand", "Desk Organizer", "Letter Tray"], (6, 129)),
    "Outdoor": (["Cedar", "Teak", "Steel", "Canvas", "Recycled"],
                ["Planter", "Picnic Blanket", "Camping Chair", "Water Bottle", "Bird Feeder"], (12, 199)),
    "Textiles": (["Cotton", "Linen", "Wool", "Velvet", "Jute"],
                 ["Throw Blanket", "Cushion", "Rug", "Towel Set", "Tablecloth"], (15, 279)),
}


def make_products(count: int = ROW_COUNT, seed: int = SEED) -> list[dict[str, Any]]:
    """A fixed, made-up catalogue: the same seed always gives the same rows."""
    rng = random.Random(seed)
    rows = []
    for i in range(1, count + 1):
        category = rng.choice(sorted(CATEGORIES))
        materials, nouns, (low, high) = CATEGORIES[category]
        rows.append(
            {
                "id": i,
                # 7919 is prime, so the codes are distinct for every id below 10000.
                "sku": f"{category[:3].upper()}-{i * 7919 % 10000:04d}",
                "name": f"{rng.choice(ADJECTIVES)} {rng.choice(materials)} {rng.choice(nouns)}",
                "category": category,
                "price": round(rng.randint(low, high) - 0.01, 2),
                "stock": 0 if rng.random() < 0.08 else rng.randint(1, 480),
                "rating": round(rng.triangular(2.8, 5.0, 4.4), 1),
            }
        )
    return rows


PRODUCTS = make_products()


def page_of(query: str = "", sort: str = "", page: int = 1, page_size: int = 10) -> dict[str, Any]:
    """One page of the products matching `query` (case-insensitive), ordered by `sort` ("price", "-price")."""
    needle = query.strip().lower()
    rows = [r for r in PRODUCTS if needle in f"{r['sku']} {r['name']} {r['category']}".lower()]
    key = sort.removeprefix("-")
    if key:
        if key not in SORTABLE:
            raise ValueError(f"Cannot sort by {key!r}; use one of: {', '.join(sorted(SORTABLE))}")
        # Sort by id first so equal values keep a stable, predictable order in both directions.
        rows.sort(key=lambda r: r["id"])
        rows.sort(key=lambda r: r[key], reverse=sort.startswith("-"))
    pages = max(1, math.ceil(len(rows) / page_size))
    page = min(max(1, page), pages)
    start = (page - 1) * page_size
    return {
        "query": query,
        "sort": sort,
        "page": page,
        "pageSize": page_size,
        "pages": pages,
        "total": len(rows),
        "totalAll": len(PRODUCTS),
        "columns": COLUMNS,
        "rows": rows[start : start + page_size],
    }


def describe(data: dict[str, Any]) -> str:
    what = f"matching {data['query']!r}" if data["query"].strip() else "in the catalogue"
    head = f"{data['total']} products {what}; page {data['page']} of {data['pages']}"
    if data["sort"]:
        head += f", sorted by {data['sort']}"
    lines = [
        f"{r['sku']}  {r['name']}  ({r['category']})  ${r['price']:.2f}  stock {r['stock']}  {r['rating']}★"
        for r in data["rows"]
    ]
    return head + (":\n" + "\n".join(lines) if lines else ".")


PageSize = Annotated[int, Field(ge=1, le=100, description="Rows per page")]

apps = Apps()
apps.add_html_resource(
    VIEW_URI,
    load_view("table.html"),
    name="products-table",
    title="Product table",
    description="Sortable, searchable table of the product catalogue",
    prefers_border=True,
)


@apps.tool(
    resource_uri=VIEW_URI,
    name="browse-table",
    annotations=ToolAnnotations(read_only_hint=True),
    title="Browse products",
    description=(
        f"Browse a catalogue of {ROW_COUNT} products (name, category, price, stock, rating) in an "
        "interactive table the person can search, sort and page through. Optionally pre-filter with a query."
    ),
)
def browse_table(
    query: Annotated[str, Field(description="Search text matched against SKU, name and category")] = "",
    pageSize: PageSize = 10,  # camelCase: the argument name is part of the tool's public schema
) -> CallToolResult:
    data = page_of(query=query, page_size=pageSize)
    # A fresh id per call names this view instance: the view keeps its own state (query, sort, page) in its
    # origin's localStorage under it, so a reload, a remount or a host restart finds it again (the ext-apps
    # viewUUID pattern); another call gets another id, so another table starts fresh.
    return result(describe(data), data, meta={"viewUUID": uuid.uuid4().hex})


@apps.tool(
    resource_uri=VIEW_URI,
    visibility=["app"],
    name="table-page",
    annotations=ToolAnnotations(read_only_hint=True),
    description="One page of products for the table view (called by the view only).",
)
def table_page(
    page: Annotated[int, Field(ge=1, description="1-based page number")] = 1,
    pageSize: PageSize = 10,  # camelCase: the argument name is part of the tool's public schema
    query: str = "",
    sort: Annotated[str, Field(description='Column key, "-" prefix for descending, e.g. "-price"')] = "",
) -> CallToolResult:
    try:
        data = page_of(query=query, sort=sort, page=page, page_size=pageSize)
    except ValueError as exc:
        return result(str(exc), error=True)
    return result(describe(data), data)


mcp = MCPServer("table", version=__version__, extensions=[apps])


@mcp.resource(CATALOGUE_URI, name="products", mime_type="application/json",
              description="The catalogue's size and total stock; updated on each restock (views subscribe to it)")
def catalogue() -> str:
    return json.dumps({"products": len(PRODUCTS), "stock": sum(p["stock"] for p in PRODUCTS)})


@mcp.tool(
    name="restock",
    title="Restock a product",
    description="Add units to a product's stock (by SKU, e.g. FUR-7919). Open product tables update at once.",
)
async def restock(
    sku: Annotated[str, Field(description="The product's SKU")],
    quantity: Annotated[int, Field(ge=1, le=10_000, description="Units to add")],
    ctx: Context,
) -> CallToolResult:
    product = next((p for p in PRODUCTS if p["sku"] == sku.strip().upper()), None)
    if product is None:
        return result(f"No product has SKU {sku!r}", error=True)
    product["stock"] += quantity
    # Heard by the host on this server's subscriptions/listen stream, and passed on to the views that follow it.
    await ctx.notify_resource_updated(CATALOGUE_URI)
    return result(f"{product['name']} ({product['sku']}): stock is now {product['stock']}",
                  {"sku": product["sku"], "stock": product["stock"]})


def main() -> None:
    run(mcp)


if __name__ == "__main__":
    main()

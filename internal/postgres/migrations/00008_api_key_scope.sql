-- What each API key may do (see cdnapi.KeyScope): read lists its project's
-- files, regions and assets; upload writes into its project's origin; edge
-- sends one region's edge log lines. Every key made before scopes could
-- only list, so each stays read.

-- +goose Up
ALTER TABLE api_keys ADD COLUMN scope text NOT NULL DEFAULT 'read'
    CONSTRAINT api_keys_scope_check CHECK (scope IN ('read', 'upload', 'edge'));

-- +goose Down
ALTER TABLE api_keys DROP COLUMN scope;

-- Every change to a user's documents is announced on the channel `palgraph_documents`, the
-- owner as payload, when it commits (an empty payload after TRUNCATE: every owner). A server
-- keeps each user's library between chat turns and listens here to know when to read it
-- again, whichever replica or client made the change (`documents/changes.rs`).
CREATE FUNCTION palgraph_documents_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        PERFORM pg_notify('palgraph_documents', '');
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM pg_notify('palgraph_documents', OLD.owner);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM pg_notify('palgraph_documents', NEW.owner);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER documents_changed AFTER INSERT OR UPDATE OR DELETE ON documents
    FOR EACH ROW EXECUTE FUNCTION palgraph_documents_changed();

CREATE TRIGGER documents_truncated AFTER TRUNCATE ON documents
    FOR EACH STATEMENT EXECUTE FUNCTION palgraph_documents_changed();

"""Add consumer_types and consumers.consumer_type_id.

Revision ID: 422ece571366
Revises: b5c396305c25
Create Date: 2019-07-02
"""

import sqlalchemy as sa

from alembic import op

revision = '422ece571366'
down_revision = 'b5c396305c25'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'consumer_types',
        sa.Column('created_at', sa.DateTime, nullable=True),
        sa.Column('updated_at', sa.DateTime, nullable=True),
        sa.Column('id', sa.Integer, primary_key=True),
        sa.Column('name', sa.Unicode(255), nullable=False),
        sa.UniqueConstraint('name', name='uniq_consumer_types0name'),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
    # Batch mode so SQLite (no ALTER ... ADD CONSTRAINT) rebuilds the table.
    with op.batch_alter_table('consumers') as batch:
        batch.add_column(sa.Column(
            'consumer_type_id', sa.Integer,
            sa.ForeignKey('consumer_types.id',
                          name='consumers_consumer_type_id_fkey'),
            nullable=True))
    op.create_index('consumers_consumer_type_id_idx', 'consumers',
                    ['consumer_type_id'])
